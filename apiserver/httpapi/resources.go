package httpapi

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"platform.dev/platform/apis/platform/manifest"
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

func (m ResourceMetadata) objectMeta(namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: namespace, Labels: m.Tags, Annotations: m.Annotations}
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
