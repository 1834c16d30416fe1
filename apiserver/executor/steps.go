package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"reflect"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/work"
	flowvalidation "platform.dev/platform/controllers/flow"
)

// celCostLimit bounds the work of one expression evaluation, so that a pathological expression
// fails its run instead of holding a worker.
const celCostLimit = 1_000_000

// Step names of the graph a Direct flow runs as.
const (
	directInput  = "input"
	directAgent  = "agent"
	directOutput = "output"
)

// graph is the executable form of a pinned definition.
type graph struct {
	steps map[string]platformv1.FlowStep
	edges []platformv1.FlowEdge
	input string
}

// asGraph is a definition as it runs: a Direct flow as Input -> Agent -> Output.
func asGraph(def platformv1.FlowDefinition) (platformv1.FlowDefinition, error) {
	if def.FlowKind == platformv1.DirectFlow {
		if def.Target == nil {
			return def, fmt.Errorf("the Direct flow has no target")
		}
		def.Steps = []platformv1.FlowStep{
			{Name: directInput, Type: platformv1.InputStep},
			{Name: directAgent, Type: platformv1.AgentStep, Agent: &platformv1.LocalObjectReference{Name: def.Target.ID}},
			{Name: directOutput, Type: platformv1.OutputStep},
		}
		def.Edges = []platformv1.FlowEdge{{From: directInput, To: directAgent}, {From: directAgent, To: directOutput}}
	}
	return def, nil
}

// PinnedSteps are the steps a run's pinned snapshot runs, by name (a Direct flow's three
// included; none when it is unreadable), for those that describe a run's events. The map is
// shared by every run pinning the same snapshot: never change it.
func PinnedSteps(snapshot json.RawMessage) map[string]platformv1.FlowStep {
	if g, _ := pinnedGraphs.graph(snapshot); g != nil {
		return g.steps
	}
	var def platformv1.FlowDefinition
	if len(snapshot) == 0 || json.Unmarshal(snapshot, &def) != nil {
		return map[string]platformv1.FlowStep{}
	}
	return stepsOf(def)
}

// stepsOf are the steps of a definition that has no graph (it cannot run), by name.
func stepsOf(def platformv1.FlowDefinition) map[string]platformv1.FlowStep {
	def, _ = asGraph(def)
	steps := make(map[string]platformv1.FlowStep, len(def.Steps))
	for _, s := range def.Steps {
		steps[s.Name] = s
	}
	return steps
}

// graphOf builds the graph of a definition; a Direct flow runs as Input -> Agent -> Output.
func graphOf(def platformv1.FlowDefinition) (*graph, error) {
	def, err := asGraph(def)
	if err != nil {
		return nil, err
	}
	g := &graph{steps: map[string]platformv1.FlowStep{}, edges: def.Edges}
	for _, s := range def.Steps {
		g.steps[s.Name] = s
		if s.Type == platformv1.InputStep {
			g.input = s.Name
		}
	}
	if g.input == "" {
		return nil, fmt.Errorf("the flow has no Input step")
	}
	return g, nil
}

// next is the step after from by the edge labelled when ("" for an unlabelled edge).
func (g *graph) next(from, when string) (string, bool) {
	for _, e := range g.edges {
		if e.From == from && e.When == when {
			return e.To, true
		}
	}
	return "", false
}

// agentNames lists the agents the graph invokes.
func (g *graph) agentNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, s := range g.steps {
		if s.Type == platformv1.AgentStep && s.Agent != nil && !seen[string(s.Agent.Name)] {
			seen[string(s.Agent.Name)] = true
			names = append(names, string(s.Agent.Name))
		}
	}
	return names
}

// outcome is what executing a step decided; exactly one of its shapes is set.
type outcome struct {
	// next: the step completed with output and the run continues at next.
	next   string
	output any
	// suspend: the step asks a person; the run waits. With output, the step's data while it
	// waits: the question an agent asked, which it reads with the answer when it runs again.
	suspend *work.Suspension
	// result: an Output step ended the run successfully.
	result json.RawMessage
	// failure: the run fails with this reason.
	failure string
	// retry: a transient failure of an Agent step; tried again after a pause.
	retry string
	// err: the store failed or the lease was lost while the step ran; the run is dropped and
	// resumes from its persisted state.
	err error
	// usage: the model calls whose outcome this is, recorded with it.
	usage []work.ModelCall
	// prior: the model calls the step had recorded before, when known (a resumed question's,
	// askedWith): its usage is summed from them and usage without a read.
	prior []work.ModelCall
}

// kind names the outcome for metrics.
func (o outcome) kind() string {
	switch {
	case o.err != nil:
		return "interrupted"
	case o.failure != "":
		return "failed"
	case o.retry != "":
		return "retried"
	case o.suspend != nil:
		return "suspended"
	case o.result != nil:
		return "ended"
	}
	return "completed"
}

func failed(format string, args ...any) outcome {
	return outcome{failure: fmt.Sprintf(format, args...)}
}

// maxAgentAttempts bounds the tries of an Agent step that fails transiently.
const maxAgentAttempts = 3

// execute runs one step of a run and says what happened. It has no effect other than the
// provider call of an Agent step, which is idempotent under the run's key for this attempt.
func (e *Executor) execute(ctx context.Context, run *work.FlowRun, g *graph, step platformv1.FlowStep, data work.RunData, agents map[string]provider.Agent) outcome {
	vars := map[string]any{"input": data.Input, "steps": data.Steps}
	if answer, ok := data.Answers[step.Name]; ok {
		// A step that asked before it runs sees the answer as steps.<name>.answer.
		steps := make(map[string]any, len(data.Steps)+1)
		for k, v := range data.Steps {
			steps[k] = v
		}
		steps[step.Name] = map[string]any{"answer": answer}
		vars["steps"] = steps
	}
	in := data.Current
	if step.Input != "" {
		v, err := evaluate(ctx, step.Input, vars)
		if err != nil {
			return failed("step %q: its input expression failed: %v", step.Name, err)
		}
		in = v
	}
	continueWith := func(output any) outcome {
		next, ok := g.next(step.Name, "")
		if !ok {
			return failed("step %q: no edge leaves it", step.Name)
		}
		return outcome{next: next, output: output}
	}
	switch step.Type {
	case platformv1.InputStep:
		return continueWith(in)
	case platformv1.TransformStep:
		v, err := evaluate(ctx, step.Expression, vars)
		if err != nil {
			return failed("Transform step %q: its expression failed: %v", step.Name, err)
		}
		return continueWith(v)
	case platformv1.ConditionStep:
		v, err := evaluate(ctx, step.Expression, vars)
		if err != nil {
			return failed("Condition step %q: its expression failed: %v", step.Name, err)
		}
		b, ok := v.(bool)
		if !ok {
			return failed("Condition step %q: its expression yielded %s, not a bool", step.Name, describe(v))
		}
		next, _ := g.next(step.Name, fmt.Sprint(b))
		return outcome{next: next, output: in}
	case platformv1.RouterStep:
		label := in
		if step.Expression != "" {
			v, err := evaluate(ctx, step.Expression, vars)
			if err != nil {
				return failed("Router step %q: its expression failed: %v", step.Name, err)
			}
			label = v
		}
		s, ok := label.(string)
		if !ok {
			return failed("Router step %q: it yielded %s, not a string label", step.Name, describe(label))
		}
		next, ok := g.next(step.Name, s)
		if !ok {
			return failed("Router step %q: no edge leaves it labelled %q", step.Name, s)
		}
		return outcome{next: next, output: in}
	case platformv1.OutputStep:
		result := map[string]any{"output": in}
		if step.Message != "" {
			result["message"] = step.Message
		}
		b, err := json.Marshal(result)
		if err != nil {
			return failed("Output step %q: its result is not JSON: %v", step.Name, err)
		}
		return outcome{result: b}
	case platformv1.FailureStep:
		if step.Message != "" {
			return failed("%s", step.Message)
		}
		return failed("the flow ended in Failure step %q", step.Name)
	case platformv1.AgentStep:
		return e.invokeAgent(ctx, run, g, step, in, data, agents)
	}
	return failed("step %q has the unknown type %q", step.Name, step.Type)
}

func (e *Executor) invokeAgent(ctx context.Context, run *work.FlowRun, g *graph, step platformv1.FlowStep, in any, data work.RunData,
	agents map[string]provider.Agent) outcome {
	agent, ok := agents[string(step.Agent.Name)]
	if !ok {
		return failed("Agent step %q: agent %q was not pinned", step.Name, step.Agent.Name)
	}
	req := provider.Request{
		IdempotencyKey: fmt.Sprintf("%s/%s/%d", run.ID, step.Name, run.Attempt),
		Attempt:        run.Attempt,
		Agent:          agent,
		Namespace:      run.Namespace,
		Message:        render(step.Prompt, in),
	}
	answer, hasAnswer := data.Answers[step.Name]
	if q, ok := askedQuestion(data.Steps[step.Name]); ok && hasAnswer {
		// The agent asked, a person answered: the agent goes on from its question and the answer,
		// as a model reads a function call and its result.
		q.Result = answerText(answer)
		req.Transcript = []provider.Turn{{Calls: []provider.ToolCall{q}}}
	}
	act, used, stopped := e.converse(ctx, run, step, agent, req)
	if stopped != nil {
		return *stopped
	}
	out := e.agentAnswer(ctx, g, step, agent, act, answer, hasAnswer)
	drive, _ := ctx.Value(driveKey{}).(*driveState)
	// The step's model calls recorded before this try are known when its question says them and
	// it was not started since (noCallsOf), or when this execution pinned the run and recorded
	// none of the step's yet.
	var before []work.ModelCall
	known := false
	if drive != nil && drive.noCallsOf == step.Name {
		before, known = askedWith(data.Steps[step.Name])
	} else if drive != nil && drive.noUsage && drive.stagedCalls[step.Name] == 0 {
		known = true
	}
	if used != nil {
		out.usage = []work.ModelCall{*used}
		if known && before != nil {
			out.prior = before
		}
	}
	if out.suspend != nil && drive != nil && drive.stepCalls == 0 {
		// Asked with no tool call recorded: the step's resumption need not read its calls, nor
		// sum its model calls so far.
		if m, ok := out.output.(map[string]any); ok {
			m[noToolCallsKey] = true
			if calls := append(append([]work.ModelCall{}, before...), out.usage...); known && len(calls) <= maxCarriedCalls {
				m[modelCallsKey] = calls
			}
		}
	}
	return out
}

// agentAnswer is the outcome of an Agent step's functional action act.
func (e *Executor) agentAnswer(ctx context.Context, g *graph, step platformv1.FlowStep, agent provider.Agent, act provider.Action,
	answer any, hasAnswer bool) outcome {
	next, hasNext := g.next(step.Name, "")
	if !hasNext {
		return failed("step %q: no edge leaves it", step.Name)
	}
	suspend := func(kind string) outcome {
		// The agent's step runs again once answered, so that the agent answers: a question is
		// never the end of its turn.
		sus := &work.Suspension{Step: step.Name, Kind: kind, Prompt: act.Prompt, Continuation: step.Name}
		for _, o := range act.Options {
			sus.Options = append(sus.Options, work.Option{Value: o.Value, Label: o.Label})
		}
		args, _ := json.Marshal(map[string]any{"prompt": act.Prompt, "options": act.Options})
		if len(act.Options) == 0 {
			args, _ = json.Marshal(map[string]any{"prompt": act.Prompt})
		}
		return outcome{suspend: sus, output: map[string]any{"question": map[string]any{"action": act.Type, "arguments": string(args)}}}
	}
	switch act.Type {
	case provider.ActionRequestChoice:
		return suspend(work.KindChoice)
	case provider.ActionRequestConfirmation:
		return suspend(work.KindConfirmation)
	case provider.ActionRequestInput:
		return suspend(work.KindText)
	case provider.ActionShowError:
		return failed("Agent step %q: agent %q reported an error: %s", step.Name, agent.Name, act.Text)
	case provider.ActionCreateTask, provider.ActionRespond, provider.ActionShowResult:
		output := map[string]any{"action": act.Type, "text": act.Text}
		if act.Type == provider.ActionCreateTask {
			output["title"] = act.Title
		}
		if hasAnswer {
			// What the step asked stays readable to the steps after it, as steps.<name>.answer.
			output["answer"] = answer
		}
		if len(act.Deliverables) > 0 {
			stored, err := e.storeDeliverables(ctx, act.Deliverables)
			if err != nil {
				if ctx.Err() != nil {
					return outcome{retry: "interrupted"}
				}
				return failed("Agent step %q: agent %q declared deliverables that were not stored: %v", step.Name, agent.Name, err)
			}
			output["deliverables"] = stored
		}
		return outcome{next: next, output: output}
	}
	return failed("Agent step %q: agent %q answered with the unknown action %q", step.Name, agent.Name, act.Type)
}

// noToolCallsKey marks the data of an Agent step that asked its question with no tool call
// recorded (questionWithoutToolCalls); modelCallsKey holds the step's model calls then, when
// they were all known (askedWith).
const (
	noToolCallsKey = "noToolCalls"
	modelCallsKey  = "modelCalls"
)

// maxCarriedCalls bounds the model calls a question carries; a step that asked more often sums
// its calls from the store when it resumes.
const maxCarriedCalls = 8

// askedWith is the model calls an Agent step's question carries: all the step had recorded when
// it asked (ok false when it carries none).
func askedWith(stepData any) ([]work.ModelCall, bool) {
	m, _ := stepData.(map[string]any)
	raw, ok := m[modelCallsKey]
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, false
	}
	var calls []work.ModelCall
	if json.Unmarshal(b, &calls) != nil || len(calls) == 0 {
		return nil, false
	}
	return calls, true
}

// questionWithoutToolCalls says whether an Agent step's data records a question it asked with no
// tool call recorded: until the step starts again, none is.
func questionWithoutToolCalls(stepData any) bool {
	m, _ := stepData.(map[string]any)
	none, _ := m[noToolCallsKey].(bool)
	_, asked := askedQuestion(stepData)
	return none && asked
}

// askedQuestion is the question an Agent step's data records while it waits for the answer.
func askedQuestion(stepData any) (provider.ToolCall, bool) {
	m, _ := stepData.(map[string]any)
	q, _ := m["question"].(map[string]any)
	action, _ := q["action"].(string)
	args, _ := q["arguments"].(string)
	if action == "" {
		return provider.ToolCall{}, false
	}
	return provider.ToolCall{ID: "question", Name: action, Arguments: args}, true
}

// answerText is a person's answer as an agent reads it: a choice's value or the text given as
// is, yes or no for a confirmation, anything else as JSON.
func answerText(v any) string {
	if b, ok := v.(bool); ok {
		if b {
			return "yes"
		}
		return "no"
	}
	return text(v)
}

// render builds an Agent step's message: the prompt with {{ input }} replaced by the step input
// and {{ field }} by a field of it; without a prompt, the input itself, or the message of a
// conversation's input ({"message": ..., "fields": ...}).
func render(prompt string, in any) string {
	if prompt == "" {
		if m, ok := in.(map[string]any); ok {
			if message, ok := m["message"].(string); ok {
				return message
			}
		}
		return text(in)
	}
	var b strings.Builder
	for {
		start := strings.Index(prompt, "{{")
		if start < 0 {
			b.WriteString(prompt)
			return b.String()
		}
		end := strings.Index(prompt[start:], "}}")
		if end < 0 {
			b.WriteString(prompt)
			return b.String()
		}
		b.WriteString(prompt[:start])
		name := strings.TrimSpace(prompt[start+2 : start+end])
		switch m, _ := in.(map[string]any); {
		case name == "input":
			b.WriteString(text(in))
		case m != nil:
			b.WriteString(text(m[name]))
		}
		prompt = prompt[start+end+2:]
	}
}

// text is a value as an agent reads it: a string as is, anything else as JSON.
func text(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func describe(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%T %s", v, text(v))
}

// evaluate compiles and runs a flow expression in the environment validation checked it in, and
// returns its value as JSON data (maps, lists, strings, float64, bools, nil).
func evaluate(ctx context.Context, expr string, vars map[string]any) (any, error) {
	env := flowvalidation.ExpressionEnv()
	ast, issues := env.Compile(expr)
	if issues.Err() != nil {
		return nil, issues.Err()
	}
	prg, err := env.Program(ast, cel.CostLimit(celCostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, err
	}
	val, _, err := prg.ContextEval(ctx, vars)
	if err != nil {
		return nil, err
	}
	if val.Type() == types.BoolType {
		return val.Value().(bool), nil
	}
	native, err := val.ConvertToNative(reflect.TypeFor[*structpb.Value]())
	if err != nil {
		return nil, fmt.Errorf("its value %v is not JSON data: %w", val, err)
	}
	b, err := protojson.Marshal(native.(*structpb.Value))
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}

// MaxDeliverables bounds the deliverables one answer declares.
const MaxDeliverables = 10

// StoredDeliverable is a deliverable whose bytes are in the artifact store: the step's output
// carries it, and the Workplace makes it an artifact of the Task when the run completes.
type StoredDeliverable struct {
	Name       string `json:"name"`
	MediaType  string `json:"mediaType"`
	Length     int64  `json:"length"`
	StorageKey string `json:"storageKey"`
}

// storeDeliverables stores the bytes of each deliverable before the step's output records them,
// so the output never names missing bytes. A retried step stores them again under new keys; the
// bytes of an attempt that never completed are not referenced by anything.
func (e *Executor) storeDeliverables(ctx context.Context, deliverables []provider.Deliverable) ([]StoredDeliverable, error) {
	if e.artifacts == nil {
		return nil, errors.New("this platform has no artifact store")
	}
	if len(deliverables) > MaxDeliverables {
		return nil, fmt.Errorf("%d deliverables, at most %d", len(deliverables), MaxDeliverables)
	}
	out := make([]StoredDeliverable, 0, len(deliverables))
	for i, d := range deliverables {
		name := strings.TrimSpace(d.Name)
		if name == "" || len(name) > 255 || strings.ContainsAny(name, "/\\\x00") {
			return nil, fmt.Errorf("deliverables[%d].name %q: a file name of 1 to 255 characters without a path", i, d.Name)
		}
		if _, _, err := mime.ParseMediaType(d.MediaType); err != nil || len(d.MediaType) > 255 {
			return nil, fmt.Errorf("deliverables[%d].mediaType %q is not a media type", i, d.MediaType)
		}
		key, n, err := e.artifacts.Put(ctx, strings.NewReader(d.Content))
		if err != nil {
			return nil, fmt.Errorf("deliverables[%d]: %w", i, err)
		}
		out = append(out, StoredDeliverable{Name: name, MediaType: d.MediaType, Length: n, StorageKey: key})
	}
	return out, nil
}
