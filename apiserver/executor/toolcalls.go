package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/tools"
	"platform.dev/platform/apiserver/work"
)

// ToolRunner offers an agent's tools and calls them: the tools package's Manager.
type ToolRunner interface {
	// AgentTools are the Tools among names that may be called now (existing, enabled, listed).
	AgentTools(ctx context.Context, namespace string, names []string) ([]tools.Offered, error)
	// Call calls a Tool under an idempotency key (see tools.Manager.Call for its errors).
	Call(ctx context.Context, namespace, toolName string, arguments json.RawMessage, idempotencyKey string) (tools.Result, error)
}

// DefaultMaxToolCallsPerStep bounds the tool calls of one Agent step
// (Platform:Tools:MaxCallsPerStep).
const DefaultMaxToolCallsPerStep = 16

// driveState is what one execution of a run (drive) knows beyond the run's row.
type driveState struct {
	// noToolCalls: the run has no tool calls recorded, so an Agent step need not read them. True
	// for a run this execution pinned (tool calls come after the pin) until it requests any.
	noToolCalls bool
	// noUsage: no model call of the run is recorded but those this execution stages, so an
	// outcome's step usage is summed from them (work.Transition.UsageFresh) instead of read back.
	// True for a run this execution pinned until a commit records any.
	noUsage bool
	// noCallsOf is the Agent step, resumed by this execution after a question it asked with no
	// tool call recorded (questionWithoutToolCalls), that has none still: its calls are not read.
	// Only for the step's first try of this execution, before it requests any.
	noCallsOf string
	// stepCalls is how many tool calls the step that converse last ran had when its agent took
	// its action.
	stepCalls int
	// stagedCalls counts, by step, the model calls this execution staged.
	stagedCalls map[string]int
	// entry is the Entry the run came from, once read (entryRead).
	entry     EntryRef
	entryRead bool
	// resourceNamespace is the resource namespace of the run's Flow, once read
	// (resourceNamespaceRead).
	resourceNamespace     string
	resourceNamespaceRead bool
}

type driveKey struct{}

// maxExtraTurns is how many answers past its tool-call budget a model gets to answer before its
// step fails: a model that keeps calling tools it no longer has must not hold a worker.
const maxExtraTurns = 3

// converse invokes the agent of an Agent step until it takes a functional action, running the
// tools it calls in between: governed execution. Each model answer that calls tools is
// persisted with its calls before any of them runs; each call is marked started before it runs
// and completed with its result after, so a crash never runs a completed call again and never
// loses one (an interrupted call runs again under its idempotency key). The model is offered
// only the agent's enabled Tools (and the built-in actions); a call of anything else, a tool's
// error, a refusal and a rejection reach the model as error results. A Tool that requires
// approval suspends the run on an approval PendingAction first. Before each model call the
// budgets of its scopes are checked (checkBudgets): one used up suspends the run on an approval
// to continue past it. A nil outcome means act is the step's action, and used the usage of the
// model call that took it (nil when it reported none).
func (e *Executor) converse(ctx context.Context, run *work.FlowRun, step platformv1.FlowStep, agent provider.Agent, req provider.Request) (provider.Action, *work.ModelCall, *outcome) {
	log := logr.FromContextOrDiscard(ctx)
	offered := map[string]tools.Offered{}
	if e.tools != nil && len(agent.Tools) > 0 {
		list, err := e.tools.AgentTools(ctx, run.Namespace, agent.Tools)
		if err != nil {
			return provider.Action{}, nil, e.transient(run, step, agent, fmt.Errorf("reading the agent's tools: %w", err))
		}
		for _, t := range list {
			offered[t.FunctionName] = t
			req.Tools = append(req.Tools, provider.ToolSpec{Name: t.FunctionName, Description: t.Description, Parameters: t.InputSchema})
		}
	}
	var calls []work.ToolCall
	drive, _ := ctx.Value(driveKey{}).(*driveState)
	if drive == nil || !drive.noToolCalls && drive.noCallsOf != step.Name {
		var err error
		if calls, err = e.work.ToolCalls(ctx, run.ID, step.Name); err != nil {
			return provider.Action{}, nil, &outcome{err: err}
		}
	}
	// An answered question of the agent follows the step's tool calls it was asked after.
	answered := req.Transcript
	for {
		for i := range calls {
			if calls[i].Finished() {
				continue
			}
			// A tool call leaves the process: the step's (re)start is persisted before it.
			if err := provider.BeforeOutsideCall(ctx); err != nil {
				return provider.Action{}, nil, &outcome{err: err}
			}
			if out := e.runToolCall(ctx, run, step, agent, &calls[i], offered); out != nil {
				return provider.Action{}, nil, out
			}
		}
		req.Transcript = append(transcriptOf(calls), answered...)
		turns := 0
		if len(calls) > 0 {
			turns = calls[len(calls)-1].Turn
		}
		if len(calls) >= e.maxToolCalls {
			// The budget is spent: the model may still take a functional action, not call tools.
			req.Tools = nil
			if turns >= e.maxToolCalls+maxExtraTurns {
				return provider.Action{}, nil, failed("Agent step %q: agent %q kept calling tools after its limit of %d tool calls",
					step.Name, agent.Name, e.maxToolCalls).ptr()
			}
		}
		if out := e.checkBudgets(ctx, run, step, agent); out != nil {
			return provider.Action{}, nil, out
		}
		act, err := e.provider.Invoke(ctx, req)
		if err != nil {
			return provider.Action{}, nil, e.agentFailure(ctx, run, step, agent, err)
		}
		used, err := e.modelCall(ctx, run, step, agent, act)
		if err != nil {
			return provider.Action{}, nil, e.transient(run, step, agent, fmt.Errorf("reading the Entry of the run: %w", err))
		}
		if drive != nil {
			drive.stepCalls = len(calls) // what the step has when its agent acts
		}
		if act.Type != provider.ActionCallTools {
			return act, used, nil
		}
		if action, ok := builtinOf(act.ToolCalls); ok {
			action.ModelProvider, action.Model, action.Usage = act.ModelProvider, act.Model, act.Usage
			return action, used, nil
		}
		turn := make([]work.ToolCall, 0, len(act.ToolCalls))
		for i, c := range act.ToolCalls {
			seq := len(calls) + i + 1
			call := work.ToolCall{RunID: run.ID, Step: step.Name, Seq: seq, Turn: turns + 1, CallID: truncate(c.ID, 256),
				FunctionName: truncate(c.Name, 256), Arguments: truncate(c.Arguments, maxArgumentBytes+1), Status: work.ToolCallRequested,
				IdempotencyKey: fmt.Sprintf("%s/%s/tool/%d", run.ID, step.Name, seq)}
			if i == 0 {
				call.ModelText = truncate(act.Text, maxArgumentBytes)
			}
			if t, ok := offered[c.Name]; ok {
				call.Tool, call.Provider = t.Tool, t.Provider
			}
			turn = append(turn, call)
		}
		if drive != nil {
			drive.noToolCalls = false // from the request on, whether or not it committed
			drive.noUsage = false
			drive.noCallsOf = ""
		}
		// The calls are persisted with the run as committed: what the step staged goes first.
		if err := provider.BeforeOutsideCall(ctx); err != nil {
			return provider.Action{}, nil, &outcome{err: err}
		}
		var usedCalls []work.ModelCall
		if used != nil {
			usedCalls = append(usedCalls, *used)
		}
		if err := e.work.RequestToolCalls(ctx, run.ID, run.LeaseOwner, turn, usedCalls...); err != nil {
			return provider.Action{}, nil, &outcome{err: err}
		}
		if used != nil {
			observeUsage(run.WorkspaceID, *used)
		}
		log.V(1).Info("agent asked for tool calls", "step", step.Name, "calls", len(turn))
		calls = append(calls, turn...)
	}
}

// maxArgumentBytes bounds the arguments of one call; bigger ones are not run.
const maxArgumentBytes = 64 << 10

// runToolCall brings one persisted call to its result, or returns the outcome that stops the
// step on the way (an approval to wait for, a provider outage, a lost lease).
func (e *Executor) runToolCall(ctx context.Context, run *work.FlowRun, step platformv1.FlowStep, agent provider.Agent, call *work.ToolCall, offered map[string]tools.Offered) *outcome {
	owner := run.LeaseOwner
	finish := func(r work.ToolResult) *outcome {
		if err := e.work.FinishToolCall(ctx, run.ID, owner, step.Name, call.Seq, r); err != nil {
			return &outcome{err: err}
		}
		call.Status, call.Result, call.IsError, call.Truncated, call.Duration = work.ToolCallCompleted, r.Result, r.IsError, r.Truncated, r.Duration
		return nil
	}
	refuse := func(format string, args ...any) *outcome {
		return finish(work.ToolResult{Result: fmt.Sprintf(format, args...), IsError: true})
	}
	tool, isOffered := offered[call.FunctionName]
	switch {
	case provider.IsBuiltin(call.FunctionName):
		if _, err := provider.BuiltinAction(provider.ToolCall{Name: call.FunctionName, Arguments: call.Arguments}); err != nil {
			return refuse("%v", err)
		}
		return refuse("%s was not taken: a functional action must be the only call of its answer", call.FunctionName)
	case call.Status == work.ToolCallRejected:
		reason := call.DecisionReason
		if reason == "" {
			reason = "no reason was given"
		}
		return refuse("a person rejected this call of %s: %s", call.FunctionName, reason)
	case call.Status == work.ToolCallRequested && call.Tool == "":
		return refuse("%s is not a tool this agent may call", call.FunctionName)
	case call.Status == work.ToolCallRequested && !isOffered:
		return refuse("tool %s is not available to this agent any more", call.FunctionName)
	case len(call.Arguments) > maxArgumentBytes:
		return refuse("the arguments are over %d bytes; the call was not made", maxArgumentBytes)
	case call.Seq > e.maxToolCalls:
		return refuse("this step's limit of %d tool calls is reached; answer without calling tools", e.maxToolCalls)
	case call.Status == work.ToolCallRequested && tool.RequiresApproval:
		approval := work.NewApprovalCall(agent.Name, *call, tool.ToolName)
		sus := &work.Suspension{Step: step.Name, Kind: work.KindApproval, Continuation: step.Name, ToolCallSeq: call.Seq,
			Prompt: approvalPrompt(agent.Name, tool), Call: &approval}
		applyExpiry(sus, tool.ApprovalExpiry)
		return &outcome{suspend: sus}
	case call.Status == work.ToolCallAwaitingApproval:
		return failed("Agent step %q: tool call %d waits for an approval that the run does not", step.Name, call.Seq).ptr()
	case call.Status == work.ToolCallApproved:
		if reason := e.recheckApproved(ctx, run, agent, call, tool, isOffered); reason != "" {
			return finish(work.ToolResult{Result: fmt.Sprintf("the approved call of %s was not made: %s", call.FunctionName, reason),
				IsError: true, Refused: reason})
		}
	}
	if e.tools == nil {
		return refuse("no tools can be called here")
	}
	if _, err := e.work.StartToolCall(ctx, run.ID, owner, step.Name, call.Seq); err != nil {
		return &outcome{err: err}
	}
	res, err := e.tools.Call(ctx, run.Namespace, call.Tool, json.RawMessage(call.Arguments), call.IdempotencyKey)
	var configErr *tools.ConfigurationError
	switch {
	case ctx.Err() != nil:
		return &outcome{retry: "interrupted"}
	case errors.Is(err, tools.ErrToolNotAvailable):
		return refuse("%v", err)
	case errors.As(err, &configErr):
		return failed("Agent step %q: agent %q called tool %s: %v", step.Name, agent.Name, call.FunctionName, err).ptr()
	case err != nil:
		if retryErr := e.work.RetryToolCall(ctx, run.ID, owner, step.Name, call.Seq); retryErr != nil {
			return &outcome{err: retryErr}
		}
		return e.transient(run, step, agent, fmt.Errorf("tool %s: %w", call.FunctionName, err))
	}
	return finish(work.ToolResult{Result: res.Text, IsError: res.IsError, Truncated: res.Truncated, Duration: res.Duration})
}

// approvalPrompt is what the person who approves a call reads: who calls what. The complete
// arguments and the digest of the exact call are the approval's call (work.ApprovalCall), which
// the question shows as structured data.
func approvalPrompt(agent string, tool tools.Offered) string {
	return fmt.Sprintf("Allow agent %q to call tool %s (%s of tool provider %s) with the arguments shown?",
		agent, tool.Tool, tool.ToolName, tool.Provider)
}

// recheckApproved says why an approved call must not run now, or "": the call is still the
// exact call that was approved (its digest), the tool is still enabled and offered, the agent's
// current revision still lists it, and the approver still may execute runs in the workspace.
// A decision is made by a person at one moment; the call runs at another.
func (e *Executor) recheckApproved(ctx context.Context, run *work.FlowRun, agent provider.Agent, call *work.ToolCall, tool tools.Offered, offered bool) string {
	if !offered {
		return fmt.Sprintf("tool %s is no longer enabled and offered to agent %q", call.Tool, agent.Name)
	}
	if call.ApprovedDigest != "" && work.CallDigest(tool.Tool, tool.Provider, call.Arguments) != call.ApprovedDigest {
		return fmt.Sprintf("it is not the exact call that was approved (approved %s)", call.ApprovedDigest)
	}
	live, err := e.resolver.Agent(ctx, run.Namespace, agent.Name)
	switch {
	case errors.Is(err, ErrAgentNotFound):
		return fmt.Sprintf("agent %q no longer exists", agent.Name)
	case err != nil:
		return fmt.Sprintf("agent %q could not be read: %v", agent.Name, err)
	case !slices.Contains(live.Tools, call.Tool):
		return fmt.Sprintf("agent %q is no longer allowed to call tool %s", agent.Name, call.Tool)
	}
	if call.DecidedBy != "" && call.DecidedBy != work.ExpiryDecider {
		approver := run.Context
		approver.PrincipalID = call.DecidedBy
		if err := e.authorize(ctx, approver); err != nil {
			return fmt.Sprintf("the person who approved it may no longer execute runs in this workspace (%v)", err)
		}
	}
	return ""
}

// applyExpiry gives a suspension the expiry its question declares.
func applyExpiry(sus *work.Suspension, expiry *platformv1.QuestionExpiry) {
	if expiry == nil {
		return
	}
	sus.TTL, sus.OnExpiry = expiry.ExpiresAfter.Duration, strings.ToLower(string(expiry.OnExpiry))
	if expiry.Default != nil {
		sus.Default = expiry.Default.Raw
	}
	if expiry.RemindBefore != nil {
		sus.RemindBefore = expiry.RemindBefore.Duration
	}
}

// builtinOf finds a built-in action among an answer's calls that the model may take: a valid
// call of a built-in that is the answer's only call.
func builtinOf(calls []provider.ToolCall) (provider.Action, bool) {
	if len(calls) != 1 || !provider.IsBuiltin(calls[0].Name) {
		return provider.Action{}, false
	}
	act, err := provider.BuiltinAction(calls[0])
	return act, err == nil
}

// transcriptOf is the provider's view of a step's finished calls, by model answer.
func transcriptOf(calls []work.ToolCall) []provider.Turn {
	var turns []provider.Turn
	lastTurn := -1
	for _, c := range calls {
		if c.Turn != lastTurn {
			turns, lastTurn = append(turns, provider.Turn{Text: c.ModelText}), c.Turn
		}
		last := &turns[len(turns)-1]
		last.Calls = append(last.Calls, provider.ToolCall{ID: c.CallID, Name: c.FunctionName, Arguments: c.Arguments,
			Result: c.Result, IsError: c.IsError})
	}
	return turns
}

// transient is the outcome of a failure worth retrying: a retry, or after the last attempt a
// failure with the reason.
func (e *Executor) transient(run *work.FlowRun, step platformv1.FlowStep, agent provider.Agent, err error) *outcome {
	if run.Attempt >= maxAgentAttempts {
		return failed("Agent step %q: agent %q failed %d times: %v", step.Name, agent.Name, run.Attempt, err).ptr()
	}
	return &outcome{retry: err.Error()}
}

// agentFailure is the outcome of a failed model call.
func (e *Executor) agentFailure(ctx context.Context, run *work.FlowRun, step platformv1.FlowStep, agent provider.Agent, err error) *outcome {
	switch {
	case ctx.Err() != nil:
		return &outcome{retry: "interrupted"}
	case provider.IsTransient(err):
		return e.transient(run, step, agent, err)
	}
	return failed("Agent step %q: agent %q failed: %v", step.Name, agent.Name, err).ptr()
}

func (o outcome) ptr() *outcome { return &o }

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return strings.Clone(s[:cut])
}
