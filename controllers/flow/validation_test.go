package flow

import (
	"testing"

	"github.com/google/cel-go/cel"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func step(name string, typ platformv1.FlowStepType) platformv1.FlowStep {
	s := platformv1.FlowStep{Name: name, Type: typ}
	switch typ {
	case platformv1.AgentStep:
		s.Agent = &platformv1.LocalObjectReference{Name: "writer"}
	case platformv1.ConditionStep:
		s.Expression = `size(steps["draft"]) > 0`
	case platformv1.TransformStep:
		s.Expression = `{"text": input}`
	case platformv1.RouterStep:
		s.Expression = `input.kind`
	}
	return s
}

func edge(from, to, when string) platformv1.FlowEdge {
	return platformv1.FlowEdge{From: from, To: to, When: when}
}

// orchestration is a valid graph: start -> draft -> check -> (true) done | (false) failed.
func orchestration() *platformv1.FlowDefinition {
	return &platformv1.FlowDefinition{
		FlowKind: platformv1.OrchestrationFlow,
		Steps: []platformv1.FlowStep{
			step("start", platformv1.InputStep),
			step("draft", platformv1.AgentStep),
			step("check", platformv1.ConditionStep),
			step("done", platformv1.OutputStep),
			step("failed", platformv1.FailureStep),
		},
		Edges: []platformv1.FlowEdge{
			edge("start", "draft", ""),
			edge("draft", "check", ""),
			edge("check", "done", "true"),
			edge("check", "failed", "false"),
		},
	}
}

func TestValidateDefinition(t *testing.T) {
	tests := map[string]struct {
		def *platformv1.FlowDefinition
		// change turns a valid orchestration() into the case; nil keeps it.
		change func(d *platformv1.FlowDefinition)
		// want lists the field paths of the findings, in order; empty means valid.
		want []string
	}{
		"a Direct flow to an Agent is valid": {
			def: &platformv1.FlowDefinition{FlowKind: platformv1.DirectFlow, Target: &platformv1.FlowTarget{Kind: platformv1.AgentFlowTarget, ID: "triage"}},
		},
		"a Direct flow needs a target": {
			def:  &platformv1.FlowDefinition{FlowKind: platformv1.DirectFlow},
			want: []string{"definition.target"},
		},
		"a Direct flow's target is an Agent": {
			def:  &platformv1.FlowDefinition{FlowKind: platformv1.DirectFlow, Target: &platformv1.FlowTarget{Kind: "Tool", ID: "search"}},
			want: []string{"definition.target.kind"},
		},
		"a Direct flow has no steps": {
			def: &platformv1.FlowDefinition{FlowKind: platformv1.DirectFlow, Target: &platformv1.FlowTarget{Kind: platformv1.AgentFlowTarget, ID: "triage"},
				Steps: []platformv1.FlowStep{step("start", platformv1.InputStep)}},
			want: []string{"definition.steps"},
		},
		"a valid Orchestration flow has no findings": {},
		"a Router with labelled edges and a Transform are valid": {
			change: func(d *platformv1.FlowDefinition) {
				d.Steps = append(d.Steps, step("route", platformv1.RouterStep), step("shape", platformv1.TransformStep))
				d.Edges[0] = edge("start", "route", "")
				d.Edges = append(d.Edges, edge("route", "draft", "write"), edge("route", "shape", "reshape"), edge("shape", "done", ""))
			},
		},
		"an Orchestration flow needs steps": {
			change: func(d *platformv1.FlowDefinition) { d.Steps, d.Edges = nil, nil },
			want:   []string{"definition.steps"},
		},
		"step names are unique": {
			change: func(d *platformv1.FlowDefinition) { d.Steps = append(d.Steps, step("done", platformv1.OutputStep)) },
			want:   []string{"definition.steps[5].name"},
		},
		"edges connect steps of the flow": {
			change: func(d *platformv1.FlowDefinition) { d.Edges[1] = edge("draft", "nowhere", "") },
			want:   []string{"definition.edges[1].to", "definition.steps[2]", "definition.steps[3]", "definition.steps[4]"},
		},
		"exactly one Input step: none": {
			change: func(d *platformv1.FlowDefinition) {
				d.Steps[0].Type = platformv1.TransformStep
				d.Steps[0].Expression = "input"
			},
			want: []string{"definition.steps"},
		},
		"exactly one Input step: two": {
			change: func(d *platformv1.FlowDefinition) {
				d.Steps = append(d.Steps, step("again", platformv1.InputStep))
				d.Edges = append(d.Edges, edge("again", "draft", ""))
			},
			want: []string{"definition.steps[5].type"},
		},
		"no edge enters the Input step": {
			change: func(d *platformv1.FlowDefinition) { d.Edges[3] = edge("check", "start", "false") },
			want:   []string{"definition.edges[3].to", "definition.steps[4]"},
		},
		"every step is reachable from the Input step": {
			change: func(d *platformv1.FlowDefinition) {
				d.Steps = append(d.Steps, step("orphan", platformv1.OutputStep))
			},
			want: []string{"definition.steps[5]"},
		},
		"a step without an outgoing edge is an Output or Failure step": {
			change: func(d *platformv1.FlowDefinition) { d.Steps[4] = step("failed", platformv1.AgentStep) },
			want:   []string{"definition.steps[4]"},
		},
		"no edge leaves an Output or Failure step": {
			change: func(d *platformv1.FlowDefinition) { d.Edges = append(d.Edges, edge("done", "failed", "")) },
			want:   []string{"definition.edges[4].from"},
		},
		"a Condition step leaves by true and false edges": {
			change: func(d *platformv1.FlowDefinition) { d.Edges[3].When = "maybe" },
			want:   []string{"definition.edges[3].when", "definition.steps[2]"},
		},
		"a Condition step has one edge per label": {
			change: func(d *platformv1.FlowDefinition) { d.Edges[3].When = "true" },
			want:   []string{"definition.edges[3].when", "definition.steps[2]"},
		},
		"every edge leaving a Router step has a label": {
			change: func(d *platformv1.FlowDefinition) {
				d.Steps[2] = step("check", platformv1.RouterStep)
				d.Edges[3].When = ""
			},
			want: []string{"definition.edges[3].when"},
		},
		"Router labels are distinct": {
			change: func(d *platformv1.FlowDefinition) {
				d.Steps[2] = step("check", platformv1.RouterStep)
				d.Edges[3].When = "true"
			},
			want: []string{"definition.edges[3].when"},
		},
		"other steps leave by one unlabelled edge": {
			change: func(d *platformv1.FlowDefinition) {
				d.Edges[1].When = "go"
				d.Edges = append(d.Edges, edge("draft", "failed", ""))
			},
			want: []string{"definition.edges[1].when", "definition.edges[4].from"},
		},
		"an Agent step names an Agent": {
			change: func(d *platformv1.FlowDefinition) { d.Steps[1].Agent = nil },
			want:   []string{"definition.steps[1].agent.name"},
		},
		"a Condition expression compiles": {
			change: func(d *platformv1.FlowDefinition) { d.Steps[2].Expression = "steps[" },
			want:   []string{"definition.steps[2].expression"},
		},
		"a Condition expression yields a bool": {
			change: func(d *platformv1.FlowDefinition) { d.Steps[2].Expression = `"yes"` },
			want:   []string{"definition.steps[2].expression"},
		},
		"a Router expression yields a string": {
			change: func(d *platformv1.FlowDefinition) {
				d.Steps[2] = step("check", platformv1.RouterStep)
				d.Steps[2].Expression = "1 + 2"
			},
			want: []string{"definition.steps[2].expression"},
		},
		"a Transform expression compiles and may yield anything": {
			change: func(d *platformv1.FlowDefinition) {
				d.Steps = append(d.Steps, step("shape", platformv1.TransformStep), step("broken", platformv1.TransformStep))
				d.Steps[6].Expression = "input +"
				d.Edges[0] = edge("start", "shape", "")
				d.Edges = append(d.Edges, edge("shape", "broken", ""), edge("broken", "draft", ""))
			},
			want: []string{"definition.steps[6].expression"},
		},
		"expressions use only input and steps": {
			change: func(d *platformv1.FlowDefinition) { d.Steps[2].Expression = "secrets.key == 1" },
			want:   []string{"definition.steps[2].expression"},
		},
		"a step input expression compiles": {
			change: func(d *platformv1.FlowDefinition) { d.Steps[1].Input = `{"text": input.request` },
			want:   []string{"definition.steps[1].input"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			def := tt.def
			if def == nil {
				def = orchestration()
			}
			if tt.change != nil {
				tt.change(def)
			}
			errs := validateDefinition(def, field.NewPath("definition"))
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
				g.Expect(e.Detail).NotTo(BeEmpty(), "finding %s explains itself", e.Field)
			}
			g.Expect(got).To(Equal(tt.want), "findings: %v", errs)
		})
	}
}

func TestCompileReportsPositions(t *testing.T) {
	g := NewWithT(t)
	g.Expect(compile("input.a ==", nil)).To(HavePrefix("does not compile: 1:"))
	g.Expect(compile(`input.kind`, cel.BoolType)).To(BeEmpty(), "a dyn expression is accepted where a bool is needed")
	g.Expect(compile(`"a"`, cel.BoolType)).To(Equal("yields string where bool is needed"))
}

func TestAgentReferences(t *testing.T) {
	g := NewWithT(t)
	direct := &platformv1.FlowDefinition{FlowKind: platformv1.DirectFlow, Target: &platformv1.FlowTarget{Kind: platformv1.AgentFlowTarget, ID: "triage"}}
	g.Expect(agentReferences(direct, field.NewPath("definition"))).To(Equal([]agentReference{{"triage", field.NewPath("definition", "target", "id")}}))
	refs := agentReferences(orchestration(), field.NewPath("definition"))
	g.Expect(refs).To(HaveLen(1))
	g.Expect(refs[0].name).To(Equal("writer"))
	g.Expect(refs[0].path.String()).To(Equal("definition.steps[1].agent.name"))
}
