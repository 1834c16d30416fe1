package flow

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func TestSetVersionReadyCondition(t *testing.T) {
	tests := map[string]struct {
		scope       func(*platformv1.FlowVersion) versionScope
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		"a valid snapshot whose Agents exist is Resolved": {
			scope:      func(v *platformv1.FlowVersion) versionScope { return versionScope{version: v} },
			wantStatus: metav1.ConditionTrue, wantReason: platformv1.ResolvedReason, wantMessage: `version 1.0.0 of Flow "support-triage"`,
		},
		"an invalid snapshot is InvalidDefinition": {
			scope: func(v *platformv1.FlowVersion) versionScope {
				return versionScope{version: v, invalid: field.ErrorList{field.Required(snapshotPath.Child("target"), "a Direct flow needs a target")}}
			},
			wantStatus: metav1.ConditionFalse, wantReason: platformv1.InvalidDefinitionReason, wantMessage: "definition.snapshot.target: a Direct flow needs a target",
		},
		"a missing Agent is AgentNotFound with the field path": {
			scope: func(v *platformv1.FlowVersion) versionScope {
				return versionScope{version: v, missingAgents: field.ErrorList{{Type: field.ErrorTypeNotFound,
					Field: "definition.snapshot.target.id", Detail: `Agent "support-triage" not found`}}}
			},
			wantStatus: metav1.ConditionFalse, wantReason: platformv1.AgentNotFoundReason, wantMessage: `definition.snapshot.target.id: Agent "support-triage" not found`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			version := &platformv1.FlowVersion{ObjectMeta: metav1.ObjectMeta{Generation: 1},
				Definition: platformv1.FlowVersionDefinition{FlowName: "support-triage", Version: "1.0.0"}}
			s := tt.scope(version)
			setVersionReadyCondition(&s)
			c := meta.FindStatusCondition(version.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(Equal(tt.wantMessage))
		})
	}
}
