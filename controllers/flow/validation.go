package flow

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Branch labels of the edges that leave a Condition step.
const (
	trueLabel  = "true"
	falseLabel = "false"
)

// expressionEnv is the CEL environment of a flow's expressions: `input` is the submitted input
// and `steps` maps a step name to its output. The executor evaluates in the same environment.
var expressionEnv = func() *cel.Env {
	env, err := cel.NewEnv(
		cel.Variable("input", cel.DynType),
		cel.Variable("steps", cel.MapType(cel.StringType, cel.DynType)),
	)
	if err != nil {
		panic(fmt.Sprintf("flow expression environment: %v", err))
	}
	return env
}()

// validateDefinition checks what the CRD schema cannot, and reports each finding with its field
// path under path. A Direct flow names its Agent target. An Orchestration flow is a graph with
// exactly one Input step, every step reachable from it, every path ending in an Output or
// Failure step, branch labels that match the step they leave, and expressions that compile.
func validateDefinition(def *platformv1.FlowDefinition, path *field.Path) field.ErrorList {
	switch def.FlowKind {
	case platformv1.DirectFlow:
		return validateDirect(def, path)
	case platformv1.OrchestrationFlow:
		return validateOrchestration(def, path)
	}
	return field.ErrorList{explain(field.NotSupported(path.Child("flowKind"), def.FlowKind,
		[]string{string(platformv1.DirectFlow), string(platformv1.OrchestrationFlow)}), "a flow is Direct or Orchestration")}
}

func validateDirect(def *platformv1.FlowDefinition, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case def.Target == nil:
		errs = append(errs, field.Required(path.Child("target"), "a Direct flow hands its work to a target"))
	case def.Target.Kind != platformv1.AgentFlowTarget:
		errs = append(errs, explain(field.NotSupported(path.Child("target", "kind"), def.Target.Kind, []string{string(platformv1.AgentFlowTarget)}),
			"a Direct flow hands its work to an Agent"))
	}
	if len(def.Steps) > 0 || len(def.Edges) > 0 {
		errs = append(errs, field.Forbidden(path.Child("steps"), "a Direct flow has no steps or edges"))
	}
	return errs
}

// graph is an Orchestration flow's steps and edges by step name.
type graph struct {
	def   *platformv1.FlowDefinition
	index map[string]int // step name -> position in def.Steps
	out   map[string][]int
	in    map[string][]int
}

func newGraph(def *platformv1.FlowDefinition) *graph {
	g := &graph{def: def, index: map[string]int{}, out: map[string][]int{}, in: map[string][]int{}}
	for i, s := range def.Steps {
		if _, dup := g.index[s.Name]; !dup {
			g.index[s.Name] = i
		}
	}
	for j, e := range def.Edges {
		g.out[e.From] = append(g.out[e.From], j)
		g.in[e.To] = append(g.in[e.To], j)
	}
	return g
}

func validateOrchestration(def *platformv1.FlowDefinition, path *field.Path) field.ErrorList {
	steps, edges := path.Child("steps"), path.Child("edges")
	if def.Target != nil {
		return field.ErrorList{field.Forbidden(path.Child("target"), "an Orchestration flow has no target; use Agent steps")}
	}
	if len(def.Steps) == 0 {
		return field.ErrorList{field.Required(steps, "an Orchestration flow needs steps")}
	}
	g := newGraph(def)
	var errs field.ErrorList
	errs = append(errs, uniqueStepNames(def, steps)...)
	errs = append(errs, edgesConnectSteps(g, edges)...)
	input, inputErrs := oneInputStep(g, steps, edges)
	errs = append(errs, inputErrs...)
	if input != "" {
		errs = append(errs, reachableFromInput(g, input, steps)...)
	}
	errs = append(errs, pathsEndInOutputOrFailure(g, steps, edges)...)
	errs = append(errs, branchLabelsMatch(g, steps, edges)...)
	errs = append(errs, agentStepsNameAnAgent(def, steps)...)
	errs = append(errs, expressionsCompile(def, steps)...)
	return errs
}

func uniqueStepNames(def *platformv1.FlowDefinition, steps *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, s := range def.Steps {
		if seen[s.Name] {
			errs = append(errs, explain(field.Duplicate(steps.Index(i).Child("name"), s.Name), "step names are unique"))
		}
		seen[s.Name] = true
	}
	return errs
}

func edgesConnectSteps(g *graph, edges *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j, e := range g.def.Edges {
		if _, ok := g.index[e.From]; !ok {
			errs = append(errs, explain(field.NotFound(edges.Index(j).Child("from"), e.From), fmt.Sprintf("no step is named %q", e.From)))
		}
		if _, ok := g.index[e.To]; !ok {
			errs = append(errs, explain(field.NotFound(edges.Index(j).Child("to"), e.To), fmt.Sprintf("no step is named %q", e.To)))
		}
	}
	return errs
}

// oneInputStep checks that the graph starts at exactly one Input step, which no edge enters,
// and returns its name ("" when there is not exactly one).
func oneInputStep(g *graph, steps, edges *field.Path) (string, field.ErrorList) {
	var (
		errs   field.ErrorList
		inputs []int
	)
	for i, s := range g.def.Steps {
		if s.Type == platformv1.InputStep {
			inputs = append(inputs, i)
		}
	}
	switch {
	case len(inputs) == 0:
		return "", field.ErrorList{field.Required(steps, "an Orchestration flow needs exactly one Input step, where it starts")}
	case len(inputs) > 1:
		for _, i := range inputs[1:] {
			errs = append(errs, field.Invalid(steps.Index(i).Child("type"), platformv1.InputStep,
				fmt.Sprintf("a second Input step; the flow already starts at %q", g.def.Steps[inputs[0]].Name)))
		}
		return "", errs
	}
	input := g.def.Steps[inputs[0]].Name
	for _, j := range g.in[input] {
		errs = append(errs, field.Invalid(edges.Index(j).Child("to"), input, "no edge enters the Input step, where the flow starts"))
	}
	return input, errs
}

// reachableFromInput checks that every step can run: there is a path to it from the Input step.
func reachableFromInput(g *graph, input string, steps *field.Path) field.ErrorList {
	reached := map[string]bool{input: true}
	queue := []string{input}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		for _, j := range g.out[name] {
			if to := g.def.Edges[j].To; !reached[to] {
				reached[to] = true
				queue = append(queue, to)
			}
		}
	}
	var errs field.ErrorList
	for i, s := range g.def.Steps {
		if !reached[s.Name] {
			errs = append(errs, field.Invalid(steps.Index(i), s.Name, fmt.Sprintf("step %q is not reachable from the Input step %q", s.Name, input)))
		}
	}
	return errs
}

// pathsEndInOutputOrFailure checks that the steps without an outgoing edge are exactly the
// Output and Failure steps: a path never stops elsewhere, and never continues after them.
func pathsEndInOutputOrFailure(g *graph, steps, edges *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range g.def.Steps {
		terminal := s.Type == platformv1.OutputStep || s.Type == platformv1.FailureStep
		switch {
		case !terminal && len(g.out[s.Name]) == 0:
			errs = append(errs, field.Invalid(steps.Index(i), s.Name,
				fmt.Sprintf("%s step %q has no outgoing edge; only Output and Failure steps end a flow", s.Type, s.Name)))
		case terminal:
			for _, j := range g.out[s.Name] {
				errs = append(errs, field.Invalid(edges.Index(j).Child("from"), s.Name,
					fmt.Sprintf("%s step %q ends the flow; no edge leaves it", s.Type, s.Name)))
			}
		}
	}
	return errs
}

// branchLabelsMatch checks the labels of the edges leaving each step: a Condition step leaves by
// one "true" and one "false" edge, a Router step by edges with distinct labels, any other step by
// at most one unlabelled edge (the executor is sequential).
func branchLabelsMatch(g *graph, steps, edges *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range g.def.Steps {
		out := g.out[s.Name]
		switch s.Type {
		case platformv1.ConditionStep:
			seen := map[string]bool{}
			for _, j := range out {
				when := g.def.Edges[j].When
				switch {
				case when != trueLabel && when != falseLabel:
					errs = append(errs, explain(field.NotSupported(edges.Index(j).Child("when"), when, []string{trueLabel, falseLabel}),
						fmt.Sprintf("an edge leaving Condition step %q is labelled \"true\" or \"false\"", s.Name)))
				case seen[when]:
					errs = append(errs, explain(field.Duplicate(edges.Index(j).Child("when"), when),
						fmt.Sprintf("Condition step %q already leaves by a %q edge", s.Name, when)))
				}
				seen[when] = true
			}
			if len(out) > 0 && (!seen[trueLabel] || !seen[falseLabel]) {
				errs = append(errs, field.Invalid(steps.Index(i), s.Name,
					fmt.Sprintf("Condition step %q needs one edge for \"true\" and one for \"false\"", s.Name)))
			}
		case platformv1.RouterStep:
			seen := map[string]bool{}
			for _, j := range out {
				when := g.def.Edges[j].When
				switch {
				case when == "":
					errs = append(errs, field.Required(edges.Index(j).Child("when"),
						fmt.Sprintf("an edge leaving Router step %q names the label that selects it", s.Name)))
				case seen[when]:
					errs = append(errs, explain(field.Duplicate(edges.Index(j).Child("when"), when),
						fmt.Sprintf("Router step %q already leaves by a %q edge", s.Name, when)))
				}
				seen[when] = true
			}
		default:
			for n, j := range out {
				if g.def.Edges[j].When != "" {
					errs = append(errs, field.Forbidden(edges.Index(j).Child("when"),
						fmt.Sprintf("only edges leaving a Router or Condition step have a label; %q is a %s step", s.Name, s.Type)))
				}
				if n > 0 {
					errs = append(errs, field.Forbidden(edges.Index(j).Child("from"),
						fmt.Sprintf("%s step %q already has an outgoing edge; only Router and Condition steps branch", s.Type, s.Name)))
				}
			}
		}
	}
	return errs
}

func agentStepsNameAnAgent(def *platformv1.FlowDefinition, steps *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range def.Steps {
		switch {
		case s.Type == platformv1.AgentStep && (s.Agent == nil || s.Agent.Name == ""):
			errs = append(errs, field.Required(steps.Index(i).Child("agent", "name"), "an Agent step names the Agent it invokes"))
		case s.Type != platformv1.AgentStep && s.Agent != nil:
			errs = append(errs, field.Forbidden(steps.Index(i).Child("agent"), "only Agent steps invoke an Agent"))
		}
	}
	return errs
}

// expressionsCompile compiles the expression of each Router (a string label), Condition (a bool)
// and Transform step and the input expression of every step.
func expressionsCompile(def *platformv1.FlowDefinition, steps *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range def.Steps {
		if s.Input != "" {
			if problem := compile(s.Input, nil); problem != "" {
				errs = append(errs, field.Invalid(steps.Index(i).Child("input"), s.Input, problem))
			}
		}
		var want *cel.Type
		switch s.Type {
		case platformv1.ConditionStep:
			want = cel.BoolType
		case platformv1.RouterStep:
			want = cel.StringType
		case platformv1.TransformStep:
		default:
			continue
		}
		if s.Expression == "" {
			if s.Type != platformv1.RouterStep {
				errs = append(errs, field.Required(steps.Index(i).Child("expression"), fmt.Sprintf("a %s step needs an expression", s.Type)))
			}
			continue
		}
		if problem := compile(s.Expression, want); problem != "" {
			errs = append(errs, field.Invalid(steps.Index(i).Child("expression"), s.Expression, problem))
		}
	}
	return errs
}

// compile returns why expr is not a CEL expression of type want (any type when nil), or "".
// An expression whose type is only known at run time (dyn) is accepted.
func compile(expr string, want *cel.Type) string {
	ast, issues := expressionEnv.Compile(expr)
	if issues.Err() != nil {
		var problems []string
		for _, e := range issues.Errors() {
			problems = append(problems, fmt.Sprintf("%d:%d: %s", e.Location.Line(), e.Location.Column()+1, e.Message))
		}
		return "does not compile: " + strings.Join(problems, "; ")
	}
	if out := ast.OutputType(); want != nil && out.Kind() != types.DynKind && !out.IsExactType(want) {
		return fmt.Sprintf("yields %s where %s is needed", out, want)
	}
	return ""
}

// explain gives a finding the sentence that the condition message shows.
func explain(err *field.Error, detail string) *field.Error {
	err.Detail = detail
	return err
}

// agentReference is an Agent a flow names, with the field path that names it.
type agentReference struct {
	name string
	path *field.Path
}

// agentReferences lists the Agents a definition names: a Direct flow's target and the agent of
// each Agent step.
func agentReferences(def *platformv1.FlowDefinition, path *field.Path) []agentReference {
	var refs []agentReference
	if def.Target != nil && def.Target.Kind == platformv1.AgentFlowTarget && def.Target.ID != "" {
		refs = append(refs, agentReference{string(def.Target.ID), path.Child("target", "id")})
	}
	for i, s := range def.Steps {
		if s.Type == platformv1.AgentStep && s.Agent != nil && s.Agent.Name != "" {
			refs = append(refs, agentReference{string(s.Agent.Name), path.Child("steps").Index(i).Child("agent", "name")})
		}
	}
	return refs
}

// ExpressionEnv is the CEL environment of flow expressions; the executor evaluates them in the
// environment that validation type-checked them in.
func ExpressionEnv() *cel.Env { return expressionEnv }

// ValidateDefinition checks a definition as the Flow reconciler does, reporting each finding with
// its field path under path; the executor refuses to run a snapshot that does not pass.
func ValidateDefinition(def *platformv1.FlowDefinition, path *field.Path) field.ErrorList {
	return validateDefinition(def, path)
}
