package entry

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func TestSetReadyCondition(t *testing.T) {
	tests := map[string]struct {
		missing     []finding
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		"an Entry whose Agent exists is Resolved": {
			wantStatus: metav1.ConditionTrue, wantReason: platformv1.ResolvedReason, wantMessage: `submits to Agent "support-triage"`,
		},
		"the first missing target is the reason and every one is in the message": {
			missing: []finding{
				{platformv1.AgentNotFoundReason, `definition.binding.agent.name: Agent "support-triage" not found`},
				{platformv1.FlowNotFoundReason, `definition.continuation.flow.name: Flow "follow-up" not found`},
			},
			wantStatus: metav1.ConditionFalse, wantReason: platformv1.AgentNotFoundReason,
			wantMessage: `definition.binding.agent.name: Agent "support-triage" not found; definition.continuation.flow.name: Flow "follow-up" not found`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			entry := &platformv1.Entry{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
			entry.Definition.Binding.Agent = &platformv1.LocalObjectReference{Name: "support-triage"}
			setReadyCondition(&scope{entry: entry, missing: tt.missing})
			c := meta.FindStatusCondition(entry.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(Equal(tt.wantMessage))
			g.Expect(c.ObservedGeneration).To(Equal(int64(2)))
		})
	}
}

func TestSetPublishedReadyCondition(t *testing.T) {
	ref := platformv1.FlowVersionReference{Name: "support-triage", Version: "1.0.0"}
	readyVersion := &platformv1.FlowVersion{ObjectMeta: metav1.ObjectMeta{Name: "support-triage-1.0.0"}, Status: platformv1.FlowVersionStatus{
		ResourceStatus: platformv1.ResourceStatus{Conditions: []metav1.Condition{{Type: platformv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: platformv1.ResolvedReason}}}}}
	brokenVersion := readyVersion.DeepCopy()
	brokenVersion.Status.Conditions[0].Status, brokenVersion.Status.Conditions[0].Reason = metav1.ConditionFalse, platformv1.AgentNotFoundReason
	enabled := &platformv1.Flow{Definition: platformv1.FlowDefinition{Enabled: ptr.To(true)}}
	disabled := &platformv1.Flow{Definition: platformv1.FlowDefinition{Enabled: ptr.To(false)}}
	tests := map[string]struct {
		target     pinnedTarget
		wantState  platformv1.PublishedTargetState
		wantReason string
	}{
		"a Ready version of an enabled Flow is Executable": {
			target: pinnedTarget{ref: ref, version: readyVersion, flow: enabled}, wantState: platformv1.TargetExecutable, wantReason: platformv1.ResolvedReason,
		},
		"an unpublished version is Unavailable with FlowVersionNotFound": {
			target: pinnedTarget{ref: ref, flow: enabled}, wantState: platformv1.TargetUnavailable, wantReason: platformv1.FlowVersionNotFoundReason,
		},
		"a version without its Flow is Unavailable with FlowNotFound": {
			target: pinnedTarget{ref: ref, version: readyVersion}, wantState: platformv1.TargetUnavailable, wantReason: platformv1.FlowNotFoundReason,
		},
		"a disabled Flow is Disabled": {
			target: pinnedTarget{ref: ref, version: readyVersion, flow: disabled}, wantState: platformv1.TargetDisabled, wantReason: platformv1.FlowDisabledReason,
		},
		"a version that is not Ready is Unavailable with its reason": {
			target: pinnedTarget{ref: ref, version: brokenVersion, flow: enabled}, wantState: platformv1.TargetUnavailable, wantReason: platformv1.AgentNotFoundReason,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			entry := &platformv1.PublishedEntry{Definition: platformv1.PublishedEntryDefinition{ResolvedTarget: ref}}
			tt.target.path = "definition.resolvedTarget"
			setPublishedReadyCondition(&publishedScope{entry: entry, targets: []pinnedTarget{tt.target}})
			c := meta.FindStatusCondition(entry.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(entry.Status.TargetState).To(Equal(tt.wantState))
			g.Expect(c.Status == metav1.ConditionTrue).To(Equal(tt.wantState == platformv1.TargetExecutable))
		})
	}
}
