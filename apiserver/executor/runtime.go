package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/work"
)

// defaultRuntimeTimeout bounds one agent call of a Runtime Run that sets no timeoutSeconds.
const defaultRuntimeTimeout = 60 * time.Second

// RunRuntimeOnce claims one runnable Runtime Run for owner and executes it; false when there was
// none. A timeout or transient provider failure is retried with backoff up to the attempt limit.
func (e *Executor) RunRuntimeOnce(ctx context.Context, owner string) (bool, error) {
	worked, _, err := e.runRuntimeOnce(ctx, owner)
	return worked, err
}

// runRuntimeOnce is RunRuntimeOnce; leftOut tells that the look left out the runs of workspaces
// at their share.
func (e *Executor) runRuntimeOnce(ctx context.Context, owner string) (worked, leftOut bool, err error) {
	var r *work.RuntimeRun
	workspace, leftOut, err := e.claim(func(full []string) (string, error) {
		var err error
		r, err = e.work.ClaimRuntimeRun(ctx, owner, e.lease, full...)
		if r == nil {
			return "", err
		}
		return r.WorkspaceID, err
	})
	if err != nil || r == nil {
		return false, leftOut, err
	}
	defer e.done(workspace)
	return true, leftOut, e.executeRuntimeRun(ctx, r, owner)
}

// executeRuntimeRun executes the Runtime Run owner claimed, until it ends or is given up.
func (e *Executor) executeRuntimeRun(ctx context.Context, r *work.RuntimeRun, owner string) error {
	log := e.log.WithValues("workspaceId", r.WorkspaceID, "runtimeRunId", r.ID, "runtimeExecutionId", r.ID, "agent", r.AgentName)
	for _, kv := range [][2]string{{"interactionId", r.InteractionID}, {"workTaskId", r.WorkTaskID},
		{"workExecutionId", r.WorkExecutionID}, {"flowRunId", r.FlowRunID}} {
		if kv[1] != "" {
			log = log.WithValues(kv[0], kv[1])
		}
	}
	runCtx, release := e.keepLease(ctx, func(ctx context.Context) (bool, error) {
		return e.work.RenewRuntimeLease(ctx, r.ID, owner, e.lease)
	})
	defer release()
	finish := func(o work.RuntimeOutcome) error {
		if o.Status == work.RuntimeFailed {
			log.Info("runtime run failed", "reason", o.Error)
		}
		return e.work.FinishRuntimeRun(context.WithoutCancel(ctx), r.ID, owner, o)
	}
	if err := e.authorize(runCtx, r.Context); err != nil {
		if errors.Is(err, ErrNotPermitted) {
			return finish(work.RuntimeOutcome{Status: work.RuntimeFailed,
				Error: "the Principal that created the run no longer holds runs/execute in its workspace"})
		}
		return err
	}
	agent, err := e.resolver.Agent(runCtx, r.Namespace, r.AgentName)
	switch {
	case errors.Is(err, ErrAgentNotFound) || (err == nil && agent.UID != r.AgentUID):
		return finish(work.RuntimeOutcome{Status: work.RuntimeFailed, Error: fmt.Sprintf("agent %s no longer exists", r.AgentUID)})
	case err != nil:
		return err
	case r.AgentVersion != "" && r.AgentVersion != strconv.FormatInt(agent.Generation, 10):
		return finish(work.RuntimeOutcome{Status: work.RuntimeFailed,
			Error: fmt.Sprintf("agent %q is at version %d, not %s", agent.Name, agent.Generation, r.AgentVersion)})
	}
	for {
		timeout := defaultRuntimeTimeout
		if r.TimeoutSeconds > 0 {
			timeout = time.Duration(r.TimeoutSeconds) * time.Second
		}
		callCtx, cancelCall := context.WithTimeout(runCtx, timeout)
		act, err := e.provider.Invoke(callCtx, provider.Request{IdempotencyKey: fmt.Sprintf("%s/%d", r.ID, r.Attempt), Attempt: r.Attempt,
			Agent: agent, Namespace: r.Namespace, Message: runtimeMessage(r.Messages),
			Overrides: provider.Overrides{Temperature: r.Overrides.Temperature, MaxOutputTokens: r.Overrides.MaxOutputTokens}})
		timedOut := errors.Is(callCtx.Err(), context.DeadlineExceeded)
		cancelCall()
		if runCtx.Err() != nil {
			return nil // stopping or taken away: the next worker starts over from the persisted run
		}
		switch {
		case err != nil && (timedOut || provider.IsTransient(err)):
			reason := err.Error()
			if timedOut {
				reason = fmt.Sprintf("the agent did not answer within %s", timeout)
			}
			if r.Attempt >= maxAgentAttempts {
				return finish(work.RuntimeOutcome{Status: work.RuntimeFailed, Error: fmt.Sprintf("failed %d times: %s", r.Attempt, reason)})
			}
			if err := finish(work.RuntimeOutcome{Retry: true, Error: reason}); err != nil {
				return err
			}
			select {
			case <-runCtx.Done():
				return nil
			case <-time.After(e.backoff << (r.Attempt - 1)):
			}
			r.Attempt++
			continue
		case err != nil:
			return finish(work.RuntimeOutcome{Status: work.RuntimeFailed, Error: err.Error()})
		case act.Type == provider.ActionCallTools:
			// A Runtime Run has no step to persist tool calls in: it runs no tools, and only a
			// built-in action taken alone counts as the agent's answer.
			builtin, ok := builtinOf(act.ToolCalls)
			if !ok {
				return finish(work.RuntimeOutcome{Status: work.RuntimeFailed, ModelProvider: act.ModelProvider, ResolvedModel: act.Model,
					Error: "the agent asked for tool calls; Runtime Runs do not run tools (run the agent in a Flow)"})
			}
			builtin.ModelProvider, builtin.Model = act.ModelProvider, act.Model
			act = builtin
		}
		if act.Type == provider.ActionShowError {
			return finish(work.RuntimeOutcome{Status: work.RuntimeFailed, Error: act.Text,
				ModelProvider: act.ModelProvider, ResolvedModel: act.Model})
		}
		response := map[string]any{"action": act.Type}
		switch {
		case act.Prompt != "":
			response["content"] = act.Prompt
		case act.Title != "" && act.Text == "":
			response["content"] = act.Title
		default:
			response["content"] = act.Text
		}
		if len(act.Options) > 0 {
			response["options"] = act.Options
		}
		data, err := json.Marshal(response)
		if err != nil {
			return err
		}
		log.Info("runtime run completed")
		return finish(work.RuntimeOutcome{Status: work.RuntimeCompleted, Response: data,
			ModelProvider: act.ModelProvider, ResolvedModel: act.Model})
	}
}

// runtimeMessage is what the agent reads of the input messages: the content of a single
// message, or each message on its own line prefixed by its role.
func runtimeMessage(messages []work.Message) string {
	if len(messages) == 1 {
		return messages[0].Content
	}
	lines := make([]string, 0, len(messages))
	for _, m := range messages {
		lines = append(lines, m.Role+": "+m.Content)
	}
	return strings.Join(lines, "\n")
}
