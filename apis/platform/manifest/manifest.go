// Package manifest converts between the spec's manifest spelling (`apiVersion: platform/v1`,
// `metadata.tags`) and the kube spelling (`platform.dev/v1`, `metadata.labels`). It is the one
// place that does so: `platform apply`, Pack archives and /api bodies all go through it.
package manifest

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

const (
	// SpecAPIVersion is the apiVersion the spec's manifests carry.
	SpecAPIVersion = "platform/v1"
	// BuiltinAnnotation marks resources the platform creates itself.
	BuiltinAnnotation = "platform/builtin"
	// SystemManagedLabel, with the value "true", marks an object that the platform keeps in step
	// with another one and that people do not edit: the hidden Direct Agent Flow through which
	// publication normalizes an Agent-bound Entry. The service API refuses to replace or delete
	// such an object, and refuses the label on what callers write.
	SystemManagedLabel = "platform/system-managed"
)

// KubeAPIVersion is the apiVersion of the platform.dev/v1 group.
var KubeAPIVersion = platformv1.GroupVersion.String()

// Normalize rewrites obj, a decoded manifest, in place into the kube spelling. Either spelling
// is accepted; tags and labels together are refused, since it is unclear which one is meant.
func Normalize(obj map[string]any) field.ErrorList {
	var errs field.ErrorList
	switch v := obj["apiVersion"]; v {
	case SpecAPIVersion:
		obj["apiVersion"] = KubeAPIVersion
	case KubeAPIVersion:
	case nil, "":
		errs = append(errs, field.Required(field.NewPath("apiVersion"), fmt.Sprintf("must be %s or %s", SpecAPIVersion, KubeAPIVersion)))
	default:
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), v, []string{SpecAPIVersion, KubeAPIVersion}))
	}
	metadata, ok := obj["metadata"].(map[string]any)
	if !ok {
		if obj["metadata"] != nil {
			errs = append(errs, field.Invalid(field.NewPath("metadata"), "", "must be an object"))
		}
		return errs
	}
	if tags, has := metadata["tags"]; has {
		if _, both := metadata["labels"]; both {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "tags"), "metadata.tags and metadata.labels cannot both be set"))
			return errs
		}
		metadata["labels"] = tags
		delete(metadata, "tags")
	}
	return errs
}

// ToSpecSpelling rewrites obj, in the kube spelling, into the spec's spelling for /api responses.
func ToSpecSpelling(obj map[string]any) {
	if obj["apiVersion"] == KubeAPIVersion {
		obj["apiVersion"] = SpecAPIVersion
	}
	if metadata, ok := obj["metadata"].(map[string]any); ok {
		if labels, has := metadata["labels"]; has {
			metadata["tags"] = labels
			delete(metadata, "labels")
		}
	}
}
