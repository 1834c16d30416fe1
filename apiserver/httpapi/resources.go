package httpapi

import (
	"fmt"
	"time"

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

func MetadataFrom(m metav1.ObjectMeta) ResourceMetadata {
	out := ResourceMetadata{Name: m.Name, Tags: m.Labels, Annotations: m.Annotations, UID: string(m.UID), Generation: m.Generation}
	if !m.CreationTimestamp.IsZero() {
		t := m.CreationTimestamp.UTC()
		out.CreatedAt = &t
	}
	return out
}

func ConditionsFrom(in []metav1.Condition) []Condition {
	out := make([]Condition, 0, len(in))
	for _, c := range in {
		out = append(out, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			ObservedGeneration: c.ObservedGeneration, LastTransitionTime: c.LastTransitionTime.UTC()})
	}
	return out
}

// SpecAPIVersion is what /api bodies carry; the kube spelling is accepted on input too.
const SpecAPIVersion = manifest.SpecAPIVersion

// ResourceState is the observed state every Management kind reports.
type ResourceState struct {
	ObservedGeneration int64       `json:"observedGeneration" doc:"The metadata.generation the state was last computed from"`
	Conditions         []Condition `json:"conditions" doc:"Current state; every kind reports Ready"`
	Provisioning       string      `json:"provisioning,omitempty" enum:"Pending,Provisioned,Failed" doc:"Whether the Runtime plane holds the current generation"`
}

func StateFrom(in platformv1.ResourceStatus) ResourceState {
	return ResourceState{ObservedGeneration: in.ObservedGeneration, Conditions: ConditionsFrom(in.Conditions), Provisioning: string(in.Provisioning)}
}

// ReadyCondition is the Ready condition, or nil before a reconciler reported one.
func ReadyCondition(in []metav1.Condition) *Condition {
	ready := meta.FindStatusCondition(in, platformv1.ReadyCondition)
	if ready == nil {
		return nil
	}
	return &ConditionsFrom([]metav1.Condition{*ready})[0]
}

// EnvelopeErrors checks the parts of an envelope that the kube API cannot: the apiVersion
// spelling, and on a replace that the body names the object of the path.
func EnvelopeErrors(apiVersion string, metadata ResourceMetadata, pathName string) error {
	var errs field.ErrorList
	if err := CheckAPIVersion(apiVersion, false); err != nil {
		errs = append(errs, err)
	}
	if pathName != "" && metadata.Name != pathName {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), metadata.Name, "must match the name in the path"))
	}
	return BodyErrors(errs)
}

// CheckAPIVersion accepts both spellings of the platform's apiVersion, and none when optional.
func CheckAPIVersion(apiVersion string, optional bool) *field.Error {
	if (optional && apiVersion == "") || apiVersion == manifest.SpecAPIVersion || apiVersion == manifest.KubeAPIVersion {
		return nil
	}
	return field.NotSupported(field.NewPath("apiVersion"), apiVersion, []string{manifest.SpecAPIVersion, manifest.KubeAPIVersion})
}

// BodyErrors is nil without errors, and the Problem Details of FieldErrors otherwise.
func BodyErrors(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return FieldErrors(errs)
}

// FieldManager is the field manager of the service API's writes to the kube API.
const FieldManager = "platform-api"

// AgentReadiness says whether an agent can take runs now, and why not. Ready means the agent's
// Ready condition is True for its current generation: a condition computed for an earlier
// generation says nothing about the definition a run would execute.
func AgentReadiness(agent *platformv1.Agent) (bool, string) {
	switch {
	case agent.DeletionTimestamp != nil:
		return false, "the agent is being deleted"
	case agent.Status.Provisioning == platformv1.ProvisioningFailed:
		return false, "the agent's provisioning failed"
	}
	ready := meta.FindStatusCondition(agent.Status.Conditions, platformv1.ReadyCondition)
	switch {
	case ready == nil:
		return false, "the agent reports no Ready condition yet"
	case ready.Status != metav1.ConditionTrue:
		return false, "the agent is not Ready: " + ready.Reason
	case ready.ObservedGeneration != 0 && ready.ObservedGeneration != agent.Generation,
		agent.Status.ObservedGeneration != agent.Generation:
		return false, fmt.Sprintf("the agent's status is of generation %d, not its current %d", agent.Status.ObservedGeneration, agent.Generation)
	}
	return true, ""
}
