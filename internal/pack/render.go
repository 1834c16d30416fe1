package pack

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Namespace is the resource namespace of an installation, `publisher.name`.
func (m Manifest) Namespace() string { return m.Metadata.Publisher + "." + m.Metadata.Name }

// Render returns the object to apply into kube namespace `namespace`: binding references
// replaced by their selection (an unselected binding leaves the field absent, so an Agent
// reports that it has no model), the kind's schema defaults applied (so that its Fingerprint
// equals the one of the object the server stores), the ownership label and the version and
// fingerprint annotations.
func Render(a *Archive, r Resource, namespace string, bindings map[string]BindingSelection) (*unstructured.Unstructured, error) {
	if r.Object == nil {
		return nil, fmt.Errorf("pack: resource %s has no object", Key(r.Kind, r.Name))
	}
	all, err := kindSchemas()
	if err != nil {
		return nil, err
	}
	ks, ok := all[string(r.Kind)]
	if !ok {
		return nil, fmt.Errorf("pack: %s cannot be in a Pack", r.Kind)
	}
	obj := runtime.DeepCopyJSON(r.Object)
	if def, ok := obj["definition"].(map[string]any); ok {
		for _, site := range bindingSites[string(r.Kind)] {
			ref, ok := def[site.field].(map[string]any)
			if !ok {
				continue
			}
			name, isBinding := ref["binding"].(string)
			if !isBinding {
				continue
			}
			sel, selected := bindings[name]
			if !selected || sel.Name == "" {
				delete(def, site.field)
				continue
			}
			to := map[string]any{"name": sel.Name}
			if sel.Namespace != "" {
				to["namespace"] = sel.Namespace
			}
			def[site.field] = to
		}
	}
	defaulting.Default(obj, ks.structural)
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(namespace)
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[PackLabel] = a.Manifest.Namespace()
	u.SetLabels(labels)
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[VersionAnnotation] = a.Manifest.Metadata.Version
	annotations[FingerprintAnnotation] = string(Fingerprint(obj))
	u.SetAnnotations(annotations)
	return u, nil
}

// ignoredAnnotations are written by tools, not by a person about the object's content.
var ignoredAnnotations = map[string]bool{"kubectl.kubernetes.io/last-applied-configuration": true}

// content is what a person can change of an object: its definition and its labels and
// annotations other than the platform's. Status and server-set metadata are left out.
func content(definition map[string]any, labels, annotations map[string]string) map[string]any {
	c := map[string]any{}
	if len(definition) > 0 {
		c["definition"] = dropNulls(definition)
	}
	if l := personal(labels); len(l) > 0 {
		c["labels"] = l
	}
	if a := personal(annotations); len(a) > 0 {
		c["annotations"] = a
	}
	return c
}

func personal(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if strings.HasPrefix(k, platformPrefix) || ignoredAnnotations[k] {
			continue
		}
		out[k] = v
	}
	return out
}

// dropNulls removes null members of objects: an explicit null and an absent field mean the same.
func dropNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if x != nil {
				out[k] = dropNulls(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = dropNulls(x)
		}
		return out
	}
	return v
}

func objectContent(obj map[string]any) map[string]any {
	def, _ := obj["definition"].(map[string]any)
	return content(def, stringMap(obj, "labels"), stringMap(obj, "annotations"))
}

func stringMap(obj map[string]any, f string) map[string]string {
	md, _ := obj["metadata"].(map[string]any)
	m, _ := md[f].(map[string]any)
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// Fingerprint is the sha256 of the canonical JSON (object keys sorted) of what a person can
// change of obj: `definition`, and labels and annotations except the platform's. The same
// content always has the same fingerprint, whatever the status or server-set metadata.
func Fingerprint(obj map[string]any) platformv1.Digest {
	return digest(objectContent(obj))
}

// LiveFingerprint is the Fingerprint of a live object as Plan sees it.
func (l LiveObject) Fingerprint() platformv1.Digest {
	return digest(content(l.Definition, l.Labels, l.Annotations))
}

func digest(c map[string]any) platformv1.Digest {
	b, err := json.Marshal(c)
	if err != nil {
		// Only JSON values are in objects decoded from JSON or YAML; anything else is a bug.
		panic(fmt.Sprintf("pack: fingerprint of a non-JSON value: %v", err))
	}
	sum := sha256.Sum256(b)
	return platformv1.Digest("sha256:" + hex.EncodeToString(sum[:]))
}

// LiveFrom takes what Plan needs of a live object.
func LiveFrom(u *unstructured.Unstructured) LiveObject {
	def, _ := u.Object["definition"].(map[string]any)
	return LiveObject{
		Kind: platformv1.PackResourceKind(u.GetKind()), Name: u.GetName(),
		Labels: u.GetLabels(), Annotations: u.GetAnnotations(), Definition: def,
	}
}
