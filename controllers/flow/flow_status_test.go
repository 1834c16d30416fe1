package flow

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func TestSetReadyCondition(t *testing.T) {
	direct := func() *platformv1.Flow {
		return &platformv1.Flow{ObjectMeta: metav1.ObjectMeta{Name: "triage", Generation: 5}, Definition: platformv1.FlowDefinition{
			FlowKind: platformv1.DirectFlow, Target: &platformv1.FlowTarget{Kind: platformv1.AgentFlowTarget, ID: "triage"}}}
	}
	tests := map[string]struct {
		scope       scope
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		"findings make InvalidDefinition with their field paths": {
			scope: scope{flow: direct(), invalid: field.ErrorList{
				field.Invalid(field.NewPath("definition", "steps").Index(2).Child("expression"), "x +", "does not compile: 1:4: Syntax error"),
				field.Required(field.NewPath("definition", "steps"), "an Orchestration flow needs exactly one Input step, where it starts"),
			}},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.InvalidDefinitionReason,
			wantMessage: "definition.steps[2].expression: does not compile: 1:4: Syntax error; definition.steps: an Orchestration flow needs exactly one Input step, where it starts",
		},
		"a missing Agent is AgentNotFound with its field path": {
			scope: scope{flow: direct(), missingAgents: field.ErrorList{
				{Type: field.ErrorTypeNotFound, Field: "definition.target.id", BadValue: "triage", Detail: `Agent "triage" not found`}}},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.AgentNotFoundReason,
			wantMessage: `definition.target.id: Agent "triage" not found`,
		},
		"an invalid definition wins over a missing Agent": {
			scope: scope{flow: direct(),
				invalid:       field.ErrorList{field.Required(field.NewPath("definition", "target"), "a Direct flow hands its work to a target")},
				missingAgents: field.ErrorList{{Type: field.ErrorTypeNotFound, Field: "definition.target.id", Detail: "x"}}},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.InvalidDefinitionReason,
			wantMessage: "definition.target: a Direct flow hands its work to a target",
		},
		"a valid Direct flow is Resolved": {
			scope:       scope{flow: direct()},
			wantStatus:  metav1.ConditionTrue,
			wantReason:  platformv1.ResolvedReason,
			wantMessage: `Direct flow to Agent "triage"`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			setReadyCondition(&tt.scope)
			c := meta.FindStatusCondition(tt.scope.flow.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(Equal(tt.wantMessage))
			g.Expect(c.ObservedGeneration).To(Equal(int64(5)))
		})
	}
}

func TestDefinitionDigest(t *testing.T) {
	g := NewWithT(t)
	a := orchestration().Digest()
	g.Expect(string(a)).To(MatchRegexp(`^sha256:[a-f0-9]{64}$`))
	b := orchestration().Digest()
	g.Expect(b).To(Equal(a), "equal definitions digest equally")
	changed := orchestration()
	changed.Steps[1].Prompt = "Write it"
	c := changed.Digest()
	g.Expect(c).NotTo(Equal(a), "a changed definition digests differently")
}

func TestFindingsMessageIsBounded(t *testing.T) {
	g := NewWithT(t)
	def := orchestration()
	for i := range def.Steps {
		def.Steps[i].Input = "input +\n  1 +"
	}
	s := scope{flow: &platformv1.Flow{Definition: *def}, invalid: validateDefinition(def, field.NewPath("definition"))}
	s.invalid = append(s.invalid, s.invalid...)
	setReadyCondition(&s)
	c := meta.FindStatusCondition(s.flow.Status.Conditions, platformv1.ReadyCondition)
	g.Expect(c.Message).To(ContainSubstring("and 2 more"))
	g.Expect(c.Message).NotTo(ContainSubstring("\n"))
}
