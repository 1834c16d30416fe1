package httpapi

import (
	"context"
	"fmt"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
)

// ResourceMetadata is the metadata of a Management resource in the spec's spelling.
type ResourceMetadata struct {
	Name        string            `json:"name" doc:"Name, unique per kind in the workspace" minLength:"1" maxLength:"253" pattern:"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"`
	Tags        map[string]string `json:"tags,omitempty" doc:"Labels for selection and grouping"`
	Annotations map[string]string `json:"annotations,omitempty" doc:"Free-form annotations"`
	UID         string            `json:"uid,omitempty" readOnly:"true" doc:"Server-generated immutable identifier"`
	Generation  int64             `json:"generation,omitempty" readOnly:"true" doc:"Increments with every change of the definition"`
	CreatedAt   *time.Time        `json:"createdAt,omitempty" readOnly:"true" doc:"When the resource was created"`
}

// Condition is one aspect of a resource's observed state.
type Condition struct {
	Type               string    `json:"type" doc:"Aspect, such as Ready"`
	Status             string    `json:"status" enum:"True,False,Unknown"`
	Reason             string    `json:"reason" doc:"Stable, machine-readable reason"`
	Message            string    `json:"message,omitempty" doc:"Explanation for people"`
	ObservedGeneration int64     `json:"observedGeneration,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
}

func metadataFrom(m metav1.ObjectMeta) ResourceMetadata {
	out := ResourceMetadata{Name: m.Name, Tags: m.Labels, Annotations: m.Annotations, UID: string(m.UID), Generation: m.Generation}
	if !m.CreationTimestamp.IsZero() {
		t := m.CreationTimestamp.UTC()
		out.CreatedAt = &t
	}
	return out
}

func conditionsFrom(in []metav1.Condition) []Condition {
	out := make([]Condition, 0, len(in))
	for _, c := range in {
		out = append(out, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			ObservedGeneration: c.ObservedGeneration, LastTransitionTime: c.LastTransitionTime.UTC()})
	}
	return out
}

// specAPIVersion is what /api bodies carry; the kube spelling is accepted on input too.
const specAPIVersion = manifest.SpecAPIVersion

// ResourceState is the observed state every Management kind reports.
type ResourceState struct {
	ObservedGeneration int64       `json:"observedGeneration" doc:"The metadata.generation the state was last computed from"`
	Conditions         []Condition `json:"conditions" doc:"Current state; every kind reports Ready"`
	Provisioning       string      `json:"provisioning,omitempty" enum:"Pending,Provisioned,Failed" doc:"Whether the Runtime plane holds the current generation"`
}

func stateFrom(in platformv1.ResourceStatus) ResourceState {
	return ResourceState{ObservedGeneration: in.ObservedGeneration, Conditions: conditionsFrom(in.Conditions), Provisioning: string(in.Provisioning)}
}

// readyCondition is the Ready condition, or nil before a reconciler reported one.
func readyCondition(in []metav1.Condition) *Condition {
	ready := meta.FindStatusCondition(in, platformv1.ReadyCondition)
	if ready == nil {
		return nil
	}
	return &conditionsFrom([]metav1.Condition{*ready})[0]
}

// envelopeErrors checks the parts of an envelope that the kube API cannot: the apiVersion
// spelling, and on a replace that the body names the object of the path.
func envelopeErrors(apiVersion string, metadata ResourceMetadata, pathName string) error {
	var errs field.ErrorList
	if err := checkAPIVersion(apiVersion, false); err != nil {
		errs = append(errs, err)
	}
	if pathName != "" && metadata.Name != pathName {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), metadata.Name, "must match the name in the path"))
	}
	return bodyErrors(errs)
}

// checkAPIVersion accepts both spellings of the platform's apiVersion, and none when optional.
func checkAPIVersion(apiVersion string, optional bool) *field.Error {
	if (optional && apiVersion == "") || apiVersion == manifest.SpecAPIVersion || apiVersion == manifest.KubeAPIVersion {
		return nil
	}
	return field.NotSupported(field.NewPath("apiVersion"), apiVersion, []string{manifest.SpecAPIVersion, manifest.KubeAPIVersion})
}

// bodyErrors is nil without errors, and the Problem Details of fieldErrors otherwise.
func bodyErrors(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return fieldErrors(errs)
}

// refusePublishedReference refuses, with 409 naming the referrer, a change to kind/name while a
// PublishedEntry of namespace ns pins a Flow version (its target or its continuation target) for
// which uses is true.
func (s *Server) refusePublishedReference(ctx context.Context, ns, kind, name string, uses func(platformv1.FlowVersionReference) bool) error {
	entries, err := listNamespace[*platformv1.PublishedEntry](ctx, s, ns, &platformv1.PublishedEntryList{})
	if err != nil {
		return err
	}
	for _, entry := range entries {
		targets := []platformv1.FlowVersionReference{entry.Definition.ResolvedTarget}
		if entry.Definition.ContinuationTarget != nil {
			targets = append(targets, *entry.Definition.ContinuationTarget)
		}
		for _, target := range targets {
			if uses(target) {
				return referencedBy(kind, name, "published entry", entry.Name)
			}
		}
	}
	return nil
}

// referencedBy is the 409 of a delete that dependency protection refuses.
func referencedBy(kind, name, referrerKind, referrer string) error {
	return huma.Error409Conflict(fmt.Sprintf("%s %q is referenced by %s %q", kind, name, referrerKind, referrer))
}
