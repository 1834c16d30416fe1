package runtimeprofile

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func TestSetReadyCondition(t *testing.T) {
	tests := map[string]struct {
		runtime     string
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		"the maf runtime is Resolved": {
			runtime:     "maf",
			wantStatus:  metav1.ConditionTrue,
			wantReason:  platformv1.ResolvedReason,
			wantMessage: "configures the maf runtime",
		},
		"an omitted runtime means maf": {
			wantStatus:  metav1.ConditionTrue,
			wantReason:  platformv1.ResolvedReason,
			wantMessage: "configures the maf runtime",
		},
		"an unknown runtime is InvalidDefinition with the field path": {
			runtime:     "langchain",
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.InvalidDefinitionReason,
			wantMessage: "definition.runtime: the platform has no runtime langchain; maf is the built-in one",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			profile := &platformv1.RuntimeProfile{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
			profile.Definition.Runtime = tt.runtime
			s := scope{profile: profile, invalid: validateDefinition(&profile.Definition, field.NewPath("definition"))}
			setReadyCondition(&s)
			c := meta.FindStatusCondition(profile.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(Equal(tt.wantMessage))
			g.Expect(c.ObservedGeneration).To(Equal(int64(2)))
		})
	}
}
