package triggers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/triggers"
)

// Trigger is a Trigger in the spec's envelope.
type Trigger struct {
	APIVersion string                       `json:"apiVersion" enum:"platform/v1,platform.dev/v1" doc:"platform/v1 (platform.dev/v1 is accepted too)"`
	Kind       string                       `json:"kind" enum:"Trigger"`
	Metadata   httpapi.ResourceMetadata     `json:"metadata"`
	Definition platformv1.TriggerDefinition `json:"definition"`
	Status     *TriggerStatus               `json:"status,omitempty" readOnly:"true"`
}

// TriggerStatus is the observed state of a Trigger.
type TriggerStatus struct {
	httpapi.ResourceState
	// Namespace is where the Trigger lives in its workspace.
	Namespace string `json:"namespace" doc:"Resource namespace of the Trigger: default, or a Pack's publisher.name"`
	// Owner is the Principal the Trigger fires as.
	Owner string `json:"owner,omitempty" doc:"The Principal the Trigger fires as: who created it or last changed its definition; its authorization is evaluated again at every firing"`
	// Paused is true after pauseAfterFailures consecutive failed occurrences.
	Paused              bool        `json:"paused" doc:"True after pauseAfterFailures consecutive failed occurrences; enable resumes it"`
	NextFireTime        *time.Time  `json:"nextFireTime,omitempty" doc:"The next scheduled instant (UTC); absent when disabled, paused or exhausted"`
	LastOccurrence      *Occurrence `json:"lastOccurrence,omitempty" doc:"The latest occurrence"`
	ConsecutiveFailures int32       `json:"consecutiveFailures" doc:"Failed occurrences since the last success, resume or change of the definition"`
}

// Occurrence is one occurrence of a Trigger.
type Occurrence struct {
	ID            string     `json:"id" doc:"Identity of the occurrence: derived from the Trigger's uid and the scheduled instant (Scheduled), or from the Run now's key (Manual)"`
	Kind          string     `json:"kind" enum:"Scheduled,Manual"`
	ScheduledTime time.Time  `json:"scheduledTime" doc:"The scheduled instant (for Run now, when it was asked), UTC"`
	FiredAt       *time.Time `json:"firedAt,omitempty" doc:"When the occurrence was decided"`
	Outcome       string     `json:"outcome" enum:"Submitted,Skipped,Failed,Missed" doc:"Missed stands for every instant up to scheduledTime that the misfire policy did not submit"`
	Reason        string     `json:"reason,omitempty" doc:"Why it did not submit, for machines: NotAuthorized, OwnerMissing, FlowNotFound, ConcurrencySkipped, Misfire, ..."`
	Message       string     `json:"message,omitempty" doc:"Why, for people"`
	PrincipalID   string     `json:"principalId,omitempty" doc:"Who it fired as: the owner, or the caller of Run now"`
	WorkItemID    string     `json:"workItemId,omitempty" doc:"The submitted WorkItem"`
	TaskID        string     `json:"taskId,omitempty" doc:"The autonomous Task the Work became (GET /api/workspaces/{workspace}/tasks/{id})"`
	FlowRunID     string     `json:"flowRunId,omitempty" doc:"The FlowRun that executes it"`
	Flow          *FlowRef   `json:"flow,omitempty" doc:"The exact Flow version it submitted to"`
}

// FlowRef is the exact Flow version an occurrence submitted to.
type FlowRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Version   string `json:"version,omitempty"`
}

func (in Trigger) Meta() httpapi.ResourceMetadata { return in.Metadata }

func (in Trigger) Validate(pathName string) error {
	return httpapi.EnvelopeErrors(in.APIVersion, in.Metadata, pathName)
}

func triggerFrom(t *platformv1.Trigger, rns platformv1.ResourceNamespace) Trigger {
	status := &TriggerStatus{
		ResourceState: httpapi.StateFrom(t.Status.ResourceStatus), Namespace: string(rns),
		Owner: t.Annotations[platformv1.TriggerOwnerAnnotation], ConsecutiveFailures: t.Status.ConsecutiveFailures,
	}
	if ready := meta.FindStatusCondition(t.Status.Conditions, platformv1.ReadyCondition); ready != nil && ready.Reason == platformv1.PausedReason {
		status.Paused = true
	}
	if next := t.Status.NextFireTime; next != nil {
		at := next.UTC()
		status.NextFireTime = &at
	}
	if last := t.Status.LastOccurrence; last != nil {
		o := Occurrence{ID: last.ID, Kind: string(last.Kind), ScheduledTime: last.ScheduledTime.UTC(), Outcome: string(last.Outcome),
			Reason: last.Reason, Message: last.Message, WorkItemID: last.WorkItemID, TaskID: last.TaskID}
		if last.FiredAt != nil {
			fired := last.FiredAt.UTC()
			o.FiredAt = &fired
		}
		status.LastOccurrence = &o
	}
	return Trigger{APIVersion: httpapi.SpecAPIVersion, Kind: "Trigger", Metadata: httpapi.MetadataFrom(t.ObjectMeta), Definition: t.Definition, Status: status}
}

func occurrenceFrom(o domain.Occurrence) Occurrence {
	out := Occurrence{ID: o.ID, Kind: string(o.Kind), ScheduledTime: o.ScheduledAt, Outcome: string(o.Outcome), Reason: o.Reason,
		Message: o.Message, PrincipalID: o.PrincipalID, WorkItemID: o.WorkItemID, TaskID: o.WorkTaskID, FlowRunID: o.FlowRunID}
	if !o.FiredAt.IsZero() {
		fired := o.FiredAt
		out.FiredAt = &fired
	}
	if o.FlowName != "" {
		out.Flow = &FlowRef{Namespace: o.FlowNamespace, Name: o.FlowName, Version: o.FlowVersion}
	}
	return out
}

// resourceNamespaceOf is the resource namespace a request names, default when it names none.
func resourceNamespaceOf(name string) platformv1.ResourceNamespace {
	if name == "" {
		return platformv1.DefaultResourceNamespace
	}
	return platformv1.ResourceNamespace(name)
}
