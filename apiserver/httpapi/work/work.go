package work

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/executor"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/management"
	domain "platform.dev/platform/apiserver/work"
	flowvalidation "platform.dev/platform/controllers/flow"
)

// maxWaitSeconds bounds how long a submission or a response waits for its run to settle.
const maxWaitSeconds = 30

// WorkItemFlowReference selects the Flow a WorkItem runs: an exact version, or the active one.
type WorkItemFlowReference struct {
	Name    string `json:"name" minLength:"1" maxLength:"253" doc:"Name of the Flow in the workspace"`
	Version string `json:"version,omitempty" maxLength:"128" doc:"Exact published version; omitted selects the Flow's active version"`
	Draft   bool   `json:"draft,omitempty" doc:"Run the Flow's current draft instead of a published version (a Draft Run); excludes version"`
}

// Correlation is the chain a record belongs to: InteractionId -> WorkTaskId -> WorkExecutionId
// -> FlowRunId -> runtime execution.
type Correlation struct {
	InteractionID      string `json:"interactionId,omitempty" doc:"The Interaction (conversation) the work came from, if any"`
	WorkTaskID         string `json:"workTaskId,omitempty" doc:"The public Task the work is projected onto"`
	WorkExecutionID    string `json:"workExecutionId,omitempty" doc:"The WorkItem that executes"`
	FlowRunID          string `json:"flowRunId,omitempty" doc:"The FlowRun"`
	RuntimeExecutionID string `json:"runtimeExecutionId,omitempty" doc:"The runtime execution: a Runtime Run, or one Agent step attempt (run/step/attempt)"`
}

// WorkItemSubmission is the body of POST /api/work/workitems.
type WorkItemSubmission struct {
	Type          string                 `json:"type" minLength:"1" maxLength:"256" doc:"Kind of work, for people and routing"`
	Title         string                 `json:"title" maxLength:"1024" doc:"Short title of the work"`
	Instruction   string                 `json:"instruction" maxLength:"65536" doc:"What must be done; the run's input"`
	FlowReference *WorkItemFlowReference `json:"flowReference,omitempty" doc:"The Flow that says how: {name, version} exact or {name} active. Required until embedded definitions are supported."`
}

// WorkItem is a submitted WorkItem and where its run stands.
type WorkItem struct {
	ID            string                `json:"id"`
	Type          string                `json:"type"`
	Title         string                `json:"title"`
	Instruction   string                `json:"instruction"`
	Status        string                `json:"status" enum:"Pending,Running,ActionRequired,Paused,Completed,Failed,Cancelled" doc:"The state of its FlowRun"`
	Reason        string                `json:"reason,omitempty" doc:"Why it failed or was cancelled"`
	FlowReference WorkItemFlowReference `json:"flowReference" doc:"The exact Flow version it runs"`
	FlowRunID     string                `json:"flowRunId"`
	Correlation   Correlation           `json:"correlation"`
	PendingAction *PendingAction        `json:"pendingAction,omitempty" doc:"The question its run waits on, when ActionRequired"`
	CreatedAt     time.Time             `json:"createdAt"`
	UpdatedAt     time.Time             `json:"updatedAt"`
}

// WorkItemResult is the result of a WorkItem.
type WorkItemResult struct {
	WorkItemID string `json:"workItemId"`
	Status     string `json:"status" doc:"Completed when result is set"`
	Result     any    `json:"result,omitempty" doc:"The result of the Flow's Output step: output and, when set, message"`
	Reason     string `json:"reason,omitempty" doc:"Why there is no result: the run failed or was cancelled"`
}

// PendingAction is a question a suspended run waits on. Its resume token is never part of it.
type PendingAction struct {
	ID               string                 `json:"id"`
	Step             string                 `json:"step" doc:"The step that asked"`
	Kind             string                 `json:"kind" enum:"text,choice,confirmation,file,approval"`
	Prompt           string                 `json:"prompt"`
	Options          []domain.Option        `json:"options,omitempty" doc:"The answers a choice offers"`
	Status           string                 `json:"status" enum:"created,completed,expired,cancelled"`
	ExpiresAt        time.Time              `json:"expiresAt"`
	ContinuationStep string                 `json:"continuationStep" doc:"The step the run resumes at once answered"`
	Version          int64                  `json:"version" doc:"Optimistic version of the action"`
	AnsweredBy       string                 `json:"answeredBy,omitempty" doc:"The Principal who answered"`
	Answer           json.RawMessage        `json:"answer,omitempty" doc:"The recorded answer"`
	OnExpiry         string                 `json:"onExpiry,omitempty" enum:"fail,reject,proceed,escalate" doc:"What the action turns into when nobody answers before expiresAt"`
	EscalatedAt      *time.Time             `json:"escalatedAt,omitempty" doc:"When nobody answered in time and the action was re-addressed to the workspace's Owners and Admins"`
	Resolution       string                 `json:"resolution,omitempty" enum:"answered,failed,rejected,proceeded" doc:"How the action ended: answered by a person, or expired into its fallback"`
	Call             *domain.ApprovalCall   `json:"call,omitempty" doc:"The exact tool call an approval decides: agent, tool, provider, the complete arguments and the sha256 digest of that call; once approved, only that call runs"`
	Budget           *domain.BudgetCrossing `json:"budget,omitempty" doc:"The budget an approval to continue past it is about: scope, name, period, limit and what the period used"`
}

// FlowRun is one durable execution of a Flow version.
type FlowRun struct {
	ID              string             `json:"id"`
	WorkItemID      string             `json:"workItemId"`
	ParentFlowRunID string             `json:"parentFlowRunId,omitempty"`
	State           string             `json:"state" enum:"Pending,Running,ActionRequired,Paused,Completed,Failed,Cancelled"`
	Reason          string             `json:"reason,omitempty"`
	Flow            FlowRunFlow        `json:"flow"`
	Correlation     Correlation        `json:"correlation"`
	Agents          []PinnedAgent      `json:"agents,omitempty" doc:"The agent revisions pinned at first execution"`
	CurrentStep     string             `json:"currentStep,omitempty"`
	Attempt         int                `json:"attempt" doc:"Try of the current step"`
	Result          any                `json:"result,omitempty"`
	PendingAction   *PendingAction     `json:"pendingAction,omitempty"`
	Usage           *domain.ModelUsage `json:"usage,omitempty" doc:"The usage of the run's model calls: model calls, input, output and total tokens, cost in the currency of the latest priced call and costs in each currency the calls were priced in (when priced); on the read of one run"`
	Steps           []FlowRunStep      `json:"steps,omitempty" doc:"The usage of each step that called a model, on the read of one run"`
	Version         int64              `json:"version" doc:"Changes with every transition; the ETag"`
	CreatedAt       time.Time          `json:"createdAt"`
	UpdatedAt       time.Time          `json:"updatedAt"`
}

// FlowRunStep is the usage of one step of a run.
type FlowRunStep struct {
	Name  string             `json:"name"`
	Usage *domain.ModelUsage `json:"usage"`
}

// FlowRunFlow is the Flow version a run executes.
type FlowRunFlow struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty" doc:"The published version; absent for a Draft Run"`
	Digest  string `json:"digest,omitempty" doc:"Digest of the pinned snapshot, once pinned (from submission for a Draft Run)"`
	Draft   bool   `json:"draft,omitempty" doc:"True for a Draft Run: it executes the draft revision below, never a later edit"`
	// Revision and Generation identify the exact draft a Draft Run keeps.
	Revision   string `json:"revision,omitempty" doc:"The Flow's resourceVersion the Draft Run was submitted against"`
	Generation int64  `json:"generation,omitempty" doc:"The Flow's generation the Draft Run was submitted against"`
}

// PinnedAgent is an agent revision a run pinned.
type PinnedAgent struct {
	Name     string `json:"name"`
	Revision string `json:"revision"`
}

// FlowRunEvent is one transition of a run's history.
type FlowRunEvent struct {
	Seq         int64              `json:"seq"`
	Type        string             `json:"type"`
	Step        string             `json:"step,omitempty"`
	Attempt     int                `json:"attempt,omitempty"`
	State       string             `json:"state"`
	Reason      string             `json:"reason,omitempty"`
	Correlation Correlation        `json:"correlation"`
	Usage       *domain.ModelUsage `json:"usage,omitempty" doc:"On the event that records an Agent step's model calls, the usage of the step's calls so far"`
	CreatedAt   time.Time          `json:"createdAt"`
}

// PendingActionResponse is the body of a response to a PendingAction.
type PendingActionResponse struct {
	ResumeToken string  `json:"resumeToken" minLength:"1" maxLength:"256" doc:"The single-use token returned when the run was submitted or last answered"`
	Value       *string `json:"value,omitempty" maxLength:"65536" doc:"The answer of a text action, or the value of the chosen option"`
	Confirmed   *bool   `json:"confirmed,omitempty" doc:"The answer of a confirmation"`
	Approved    *bool   `json:"approved,omitempty" doc:"The answer of an approval: true lets the tool call (or the step) run, false refuses it"`
	Reason      string  `json:"reason,omitempty" maxLength:"2048" doc:"Why an approval was given or refused; a refused tool call returns it to the model"`
}

type workItemSubmitted struct {
	Status int
	ETag   string `header:"ETag"`
	Body   struct {
		WorkItem    WorkItem `json:"workItem"`
		FlowRun     FlowRun  `json:"flowRun"`
		ResumeToken string   `json:"resumeToken" doc:"Single-use token that answers the run's next pending action; returned only here and never stored"`
	}
}

type flowRunOutput struct {
	ETag string `header:"ETag"`
	Body FlowRun
}

// FlowRunInput is embedded by the input of every operation on one FlowRun (exported: huma reads
// the fields of exported embedded structs only).
type FlowRunInput struct {
	httpapi.WorkspaceInput
	RunID string `path:"runId" maxLength:"64" doc:"Id of the FlowRun"`
}

// WaitInput lets a caller wait for the run to settle before the answer.
type WaitInput struct {
	WaitSeconds int `query:"waitSeconds" minimum:"0" maximum:"30" doc:"Wait up to this long for the run to suspend or end before answering"`
}

func (s *routes) registerWork() {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "submit-work-item", Method: http.MethodPost, Path: "/api/work/workitems", Tags: []string{tagWork},
		Summary: "Submit a WorkItem", DefaultStatus: http.StatusAccepted,
		Description: "Creates the WorkItem and the FlowRun that executes it (202); the run proceeds asynchronously. The Flow " +
			"reference is exact ({name, version}) or active ({name}); an unknown Flow or version is 422, a disabled Flow or one " +
			"without an active version 409. The response carries the single-use resumeToken for the run's next pending action. " +
			"With waitSeconds, the answer waits for the run to suspend or end.",
		Errors: []int{http.StatusConflict, http.StatusUnprocessableEntity},
	}, httpapi.PolicyRunsExecute), func(ctx context.Context, in *struct {
		httpapi.WorkspaceInput
		WaitInput
		Body WorkItemSubmission
	}) (*workItemSubmitted, error) {
		rc, err := s.workContext(ctx)
		if err != nil {
			return nil, err
		}
		ref := in.Body.FlowReference
		if ref == nil {
			return nil, httpapi.FieldErrors(field.ErrorList{field.Required(field.NewPath("flowReference"),
				"a WorkItem names the Flow that executes it; embedded definitions are not supported")})
		}
		if ref.Draft {
			if ref.Version != "" {
				return nil, httpapi.FieldErrors(field.ErrorList{field.Invalid(field.NewPath("flowReference", "version"), field.OmitValueType{},
					"a Draft Run executes the Flow's draft; name a version or draft, not both")})
			}
			return s.submitDraft(ctx, rc, in.Body, in.WaitSeconds)
		}
		if ref.Version != "" {
			if err := management.CheckVersion(ref.Version); err != nil {
				return nil, httpapi.FieldErrors(field.ErrorList{field.Invalid(field.NewPath("flowReference", "version"), field.OmitValueType{}, err.Detail)})
			}
		}
		version, err := executor.KubeResolver{Client: s.Reads()}.ResolveReference(ctx, rc.Namespace, ref.Name, ref.Version)
		switch {
		case errors.Is(err, executor.ErrFlowNotFound):
			return nil, httpapi.FieldErrors(field.ErrorList{field.NotFound(field.NewPath("flowReference"), field.OmitValueType{})})
		case errors.Is(err, executor.ErrNoActiveVersion), errors.Is(err, executor.ErrFlowDisabled):
			return nil, huma.Error409Conflict(err.Error())
		case err != nil:
			return nil, httpapi.Problem(err)
		}
		return s.submitWork(ctx, domain.Submission{
			Context: rc, Type: in.Body.Type, Title: in.Body.Title, Instruction: in.Body.Instruction,
			FlowName: ref.Name, FlowVersion: version,
		}, in.WaitSeconds)
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-work-item", Method: http.MethodGet, Path: "/api/work/workitems/{id}", Tags: []string{tagWork},
		Summary: "Read a WorkItem", Description: "With the question its run waits on, when there is one. Another workspace's WorkItem is 404.",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		httpapi.WorkspaceInput
		ID string `path:"id" maxLength:"64"`
	}) (*struct{ Body WorkItem }, error) {
		rc, err := s.workContext(ctx)
		if err != nil {
			return nil, err
		}
		item, err := s.Work().WorkItem(ctx, rc.WorkspaceID, in.ID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		var pending *PendingAction
		if item.Status == domain.StateActionRequired || item.Status == domain.StatePaused {
			action, err := s.Work().OpenPendingAction(ctx, item.FlowRunID)
			if err != nil {
				return nil, httpapi.Problem(err)
			}
			pending = pendingActionOf(action)
		}
		return &struct{ Body WorkItem }{Body: workItemOf(item, pending)}, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-work-item-result", Method: http.MethodGet, Path: "/api/work/workitems/{id}/result", Tags: []string{tagWork},
		Summary: "Read the result of a WorkItem", Description: "result is set once the WorkItem is Completed; reason says why a Failed or Cancelled one has none.",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		httpapi.WorkspaceInput
		ID string `path:"id" maxLength:"64"`
	}) (*struct{ Body WorkItemResult }, error) {
		rc, err := s.workContext(ctx)
		if err != nil {
			return nil, err
		}
		item, err := s.Work().WorkItem(ctx, rc.WorkspaceID, in.ID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return &struct{ Body WorkItemResult }{Body: WorkItemResult{WorkItemID: item.ID, Status: item.Status,
			Result: decoded(item.Result), Reason: item.Reason}}, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-flow-run", Method: http.MethodGet, Path: "/api/flowRuns/{runId}", Tags: []string{tagWork},
		Summary: "Read a FlowRun", Description: "With its open pending action (never its resume token). The ETag is the run's version. Another workspace's run is 404.",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *FlowRunInput) (*flowRunOutput, error) {
		rc, err := s.workContext(ctx)
		if err != nil {
			return nil, err
		}
		run, err := s.Work().Run(ctx, rc.WorkspaceID, in.RunID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return s.flowRunOutput(ctx, run)
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-flow-run-events", Method: http.MethodGet, Path: "/api/flowRuns/{runId}/events", Tags: []string{tagWork},
		Summary: "Read the history of a FlowRun", Description: "Every persisted transition, oldest first, after the sequence number `after`.",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		FlowRunInput
		After int64 `query:"after" minimum:"0" doc:"Only events with a greater sequence number"`
	}) (*struct{ Body httpapi.Items[FlowRunEvent] }, error) {
		rc, err := s.workContext(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := s.Work().Run(ctx, rc.WorkspaceID, in.RunID); err != nil {
			return nil, httpapi.Problem(err)
		}
		events, err := s.Work().Events(ctx, in.RunID, in.After)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := make([]FlowRunEvent, 0, len(events))
		for _, e := range events {
			out = append(out, FlowRunEvent{Seq: e.Seq, Type: e.Type, Step: e.Step, Attempt: e.Attempt, State: e.State, Reason: e.Reason, Usage: e.Usage,
				Correlation: Correlation{InteractionID: e.InteractionID, WorkTaskID: e.WorkTaskID, WorkExecutionID: e.WorkExecutionID,
					FlowRunID: e.RunID, RuntimeExecutionID: e.RuntimeExecutionID}, CreatedAt: e.CreatedAt})
		}
		return &struct{ Body httpapi.Items[FlowRunEvent] }{Body: httpapi.ItemsOf(out)}, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "respond-to-pending-action", Method: http.MethodPost, Path: "/api/flowRuns/{runId}/pending-actions/{actionId}/responses",
		Tags: []string{tagWork}, Summary: "Answer a pending action and resume the run",
		Description: "The workspace, run, action and resume token must all match. A wrong token is 400, an answer that does not fit " +
			"the action (a value that is not an option, a confirmation without confirmed, an approval without approved) 400, an expired or already resolved " +
			"action 409. The action is completed atomically, records who answered, and the run resumes at its continuation " +
			"step. The response carries a new single-use resumeToken for the run's next pending action.",
		Errors: []int{http.StatusBadRequest, http.StatusForbidden, http.StatusConflict},
	}, httpapi.PolicyRunsExecute), func(ctx context.Context, in *struct {
		FlowRunInput
		WaitInput
		ActionID string `path:"actionId" maxLength:"64"`
		Body     PendingActionResponse
	}) (*struct {
		ETag string `header:"ETag"`
		Body struct {
			PendingAction PendingAction `json:"pendingAction"`
			FlowRun       FlowRun       `json:"flowRun"`
			ResumeToken   string        `json:"resumeToken" doc:"Single-use token that answers the run's next pending action"`
		}
	}, error) {
		rc, err := s.workContext(ctx)
		if err != nil {
			return nil, err
		}
		// A worker of this process, when one is free, gets the resumed run with the answer.
		answered, err := s.Respond(ctx, domain.Response{WorkspaceID: rc.WorkspaceID, RunID: in.RunID, ActionID: in.ActionID,
			Token: in.Body.ResumeToken, PrincipalID: rc.PrincipalID, Answer: domain.Answer{Value: in.Body.Value, Confirmed: in.Body.Confirmed, Approved: in.Body.Approved, Reason: in.Body.Reason},
			MayAnswerEscalated: s.EscalationCheck(rc.PrincipalID, rc.WorkspaceID)}, in.WaitSeconds)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		action, run, token := answered.Action, answered.Run, answered.Token
		if run, err = s.waitForWorker(ctx, rc.WorkspaceID, run, answered.Settled, in.WaitSeconds); err != nil {
			return nil, err
		}
		out := &struct {
			ETag string `header:"ETag"`
			Body struct {
				PendingAction PendingAction `json:"pendingAction"`
				FlowRun       FlowRun       `json:"flowRun"`
				ResumeToken   string        `json:"resumeToken" doc:"Single-use token that answers the run's next pending action"`
			}
		}{ETag: runETag(run)}
		out.Body.PendingAction = *pendingActionOf(&action)
		if out.Body.FlowRun, err = s.flowRunOf(ctx, run); err != nil {
			return nil, err
		}
		out.Body.ResumeToken = token
		return out, nil
	})

	for _, op := range []struct {
		id, verb, summary, description string
		change                         func(ctx context.Context, rc domain.Context, runID string) (domain.FlowRun, error)
	}{
		{"pause-flow-run", "pause", "Pause a FlowRun", "A Pending, Running or ActionRequired run stops until resumed; its pending action stays answerable. Otherwise 409.",
			func(ctx context.Context, rc domain.Context, id string) (domain.FlowRun, error) {
				return s.Work().Pause(ctx, rc.WorkspaceID, id)
			}},
		{"resume-flow-run", "resume", "Resume a paused FlowRun", "The run continues where it stopped. A run that is not Paused is 409.",
			func(ctx context.Context, rc domain.Context, id string) (domain.FlowRun, error) {
				return s.Work().Resume(ctx, rc.WorkspaceID, id)
			}},
		{"cancel-flow-run", "cancel", "Cancel a FlowRun", "A run that is not terminal ends as Cancelled with its pending action. A terminal run is 409.",
			func(ctx context.Context, rc domain.Context, id string) (domain.FlowRun, error) {
				return s.Work().Cancel(ctx, rc.WorkspaceID, id, "cancelled by "+rc.PrincipalID)
			}},
	} {
		huma.Register(s.API(), httpapi.Secured(huma.Operation{
			OperationID: op.id, Method: http.MethodPost, Path: "/api/flowRuns/{runId}/" + op.verb, Tags: []string{tagWork},
			Summary: op.summary, Description: op.description, Errors: []int{http.StatusConflict},
		}, httpapi.PolicyRunsExecute), func(ctx context.Context, in *FlowRunInput) (*flowRunOutput, error) {
			rc, err := s.workContext(ctx)
			if err != nil {
				return nil, err
			}
			run, err := op.change(ctx, rc, in.RunID)
			if err != nil {
				return nil, httpapi.Problem(err)
			}
			s.wakeExecutor()
			return s.flowRunOutput(ctx, run)
		})
	}

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "delete-flow-run", Method: http.MethodDelete, Path: "/api/flowRuns/{runId}", Tags: []string{tagWork},
		Summary: "Delete a terminal FlowRun with its history", DefaultStatus: http.StatusNoContent,
		Description: "Only Completed, Failed and Cancelled runs (409 otherwise), with the current ETag in If-Match (428 without, " +
			"412 when stale). The run, its events and its pending actions are removed atomically; the WorkItem and its result stay.",
		Errors: []int{http.StatusConflict, http.StatusPreconditionFailed, http.StatusPreconditionRequired},
	}, httpapi.PolicyRunsDelete), func(ctx context.Context, in *struct {
		FlowRunInput
		httpapi.IfMatchInput
	}) (*struct{}, error) {
		return nil, s.deleteTerminalRun(ctx, in.IfMatchInput, "flow run", in.RunID, s.Work().Delete)
	})
}

// submitDraft submits a Draft Run of the Flow's current draft: the draft is read, validated and
// snapshotted now, so the run keeps this exact revision whatever later edits do.
func (s *routes) submitDraft(ctx context.Context, rc domain.Context, body WorkItemSubmission, wait int) (*workItemSubmitted, error) {
	flow := &platformv1.Flow{}
	err := s.Kube().Get(ctx, client.ObjectKey{Namespace: rc.Namespace, Name: body.FlowReference.Name}, flow)
	if apierrors.IsNotFound(err) {
		return nil, httpapi.FieldErrors(field.ErrorList{field.NotFound(field.NewPath("flowReference"), field.OmitValueType{})})
	}
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	if flow.Definition.Enabled != nil && !*flow.Definition.Enabled {
		return nil, huma.Error409Conflict(fmt.Sprintf("flow %q refuses new runs: flow is disabled", flow.Name))
	}
	if errs := flowvalidation.ValidateDefinition(&flow.Definition, field.NewPath("definition")); len(errs) > 0 {
		return nil, huma.Error409Conflict(fmt.Sprintf("the draft of flow %q is invalid: %v", flow.Name, errs.ToAggregate()))
	}
	snapshot, err := json.Marshal(flow.Definition)
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	return s.submitWork(ctx, domain.Submission{Context: rc, Type: body.Type, Title: body.Title, Instruction: body.Instruction,
		FlowName: flow.Name, Draft: &domain.DraftFlow{Revision: flow.ResourceVersion, Generation: flow.Generation,
			Digest: string(flow.Definition.Digest()), Snapshot: snapshot}}, wait)
}

// submitWork creates the WorkItem and its FlowRun, wakes the executor and answers with both.
func (s *routes) submitWork(ctx context.Context, sub domain.Submission, wait int) (*workItemSubmitted, error) {
	sub.Input = map[string]any{"type": sub.Type, "title": sub.Title, "instruction": sub.Instruction}
	// A worker of this process, when one is free, gets the submission and writes it with its
	// run's first transition (a run on the offline model is submitted, executed and ended in one
	// commit); otherwise any worker claims it.
	var (
		item    domain.WorkItem
		run     domain.FlowRun
		token   string
		settled func(context.Context, time.Duration) (domain.FlowRun, bool)
		err     error
	)
	if r, _ := s.Reserve(ctx, sub.WorkspaceID, wait); r != nil {
		var submitted domain.Submitted
		submitted, err = r.Submit(ctx, sub)
		item, run, token, settled = submitted.Item, submitted.Run, submitted.Token, submitted.Settled
	} else {
		item, run, token, err = s.Work().Submit(ctx, sub)
		if err == nil {
			s.wakeExecutor()
		}
	}
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	s.Log().Info("work item submitted", "workspaceId", item.WorkspaceID, "workTaskId", item.WorkTaskID, "workExecutionId", item.ID,
		"flowRunId", run.ID, "flow", item.FlowName, "draft", item.FlowDraft)
	if run, err = s.waitForWorker(ctx, sub.WorkspaceID, run, settled, wait); err != nil {
		return nil, err
	}
	out := &workItemSubmitted{Status: http.StatusAccepted, ETag: runETag(run)}
	if out.Body.FlowRun, err = s.flowRunOf(ctx, run); err != nil {
		return nil, err
	}
	item.Status, item.Reason, item.Result = run.State, run.Reason, run.Result
	out.Body.WorkItem = workItemOf(item, out.Body.FlowRun.PendingAction)
	out.Body.ResumeToken = token
	return out, nil
}

// workContext is the request's resolved management context. A Work operation without one (no
// Principal or no workspace) is refused before anything is written.
func (s *routes) workContext(ctx context.Context) (domain.Context, error) {
	if s.Work() == nil {
		return domain.Context{}, huma.Error503ServiceUnavailable("the Work store is not configured on this server")
	}
	rc, ok := httpapi.RequestContextFrom(ctx)
	if !ok || rc.PrincipalID == "" || rc.WorkspaceID == "" || rc.Namespace == "" {
		return domain.Context{}, huma.Error403Forbidden("no resolved management context: the request has no Principal or workspace")
	}
	return domain.Context{TenantID: rc.TenantID, WorkspaceID: rc.WorkspaceID, Namespace: rc.Namespace, PrincipalID: rc.PrincipalID}, nil
}

func (s *routes) wakeExecutor() {
	if s.Executor() != nil {
		s.Executor().Wake()
	}
}

// waitForRun waits until the run is no longer Pending or Running, for up to seconds, woken when
// a committed change of this process or of another replica settles it (Store.WaitSettled).
func (s *routes) waitForRun(ctx context.Context, workspaceID string, run domain.FlowRun, seconds int) (domain.FlowRun, error) {
	if seconds <= 0 {
		return run, nil
	}
	run, err := s.Work().WaitSettled(ctx, workspaceID, run, time.Duration(min(seconds, maxWaitSeconds))*time.Second)
	if err != nil {
		return run, httpapi.Problem(err)
	}
	return run, nil
}

// waitForWorker is waitForRun for a run that a worker of this process executes when settled is
// set (a reservation's): the worker tells the run it settled, without a read; the store is asked
// only when the worker stopped short of that.
func (s *routes) waitForWorker(ctx context.Context, workspaceID string, run domain.FlowRun,
	settled func(context.Context, time.Duration) (domain.FlowRun, bool), seconds int) (domain.FlowRun, error) {
	if seconds <= 0 || settled == nil || (run.State != domain.StatePending && run.State != domain.StateRunning) {
		return s.waitForRun(ctx, workspaceID, run, seconds)
	}
	began := time.Now()
	timeout := time.Duration(min(seconds, maxWaitSeconds)) * time.Second
	if r, ok := settled(ctx, timeout); ok {
		return r, nil
	}
	left := timeout - time.Since(began)
	if left <= 0 {
		return run, nil
	}
	run, err := s.Work().WaitSettled(ctx, workspaceID, run, left)
	if err != nil {
		return run, httpapi.Problem(err)
	}
	return run, nil
}

func (s *routes) flowRunOutput(ctx context.Context, run domain.FlowRun) (*flowRunOutput, error) {
	body, err := s.flowRunOf(ctx, run)
	if err != nil {
		return nil, err
	}
	// The read of one run sums its model calls (two reads); lists leave usage out.
	if body.Usage, err = s.Work().RunUsage(ctx, run.ID); err != nil {
		return nil, httpapi.Problem(err)
	}
	steps, err := s.Work().StepsUsage(ctx, run.ID)
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	for name, u := range steps {
		body.Steps = append(body.Steps, FlowRunStep{Name: name, Usage: u})
	}
	slices.SortFunc(body.Steps, func(a, b FlowRunStep) int { return strings.Compare(a.Name, b.Name) })
	return &flowRunOutput{ETag: runETag(run), Body: body}, nil
}

func runETag(run domain.FlowRun) string { return httpapi.ETag(strconv.FormatInt(run.Version, 10)) }

func (s *routes) flowRunOf(ctx context.Context, run domain.FlowRun) (FlowRun, error) {
	out := FlowRun{ID: run.ID, WorkItemID: run.WorkItemID, ParentFlowRunID: run.ParentFlowRunID, State: run.State, Reason: run.Reason,
		Flow: FlowRunFlow{Name: run.FlowName, Version: run.FlowVersion, Digest: run.FlowDigest, Draft: run.FlowDraft,
			Revision: run.FlowRevision, Generation: run.FlowGeneration}, CurrentStep: run.CurrentStep,
		Correlation: Correlation{InteractionID: run.InteractionID, WorkTaskID: run.WorkTaskID, WorkExecutionID: run.WorkExecutionID(), FlowRunID: run.ID},
		Attempt:     run.Attempt, Result: decoded(run.Result), Version: run.Version, CreatedAt: run.CreatedAt, UpdatedAt: run.UpdatedAt}
	if len(run.Agents) > 0 {
		// Only what the answer shows is decoded of the pinned agents, in the order of their names.
		var agents map[string]PinnedAgent
		if err := json.Unmarshal(run.Agents, &agents); err == nil {
			for _, name := range slices.Sorted(maps.Keys(agents)) {
				out.Agents = append(out.Agents, PinnedAgent{Name: agents[name].Name, Revision: agents[name].Revision})
			}
		}
	}
	if run.State == domain.StateActionRequired || run.State == domain.StatePaused {
		action, err := s.Work().OpenPendingAction(ctx, run.ID)
		if err != nil {
			return out, httpapi.Problem(err)
		}
		out.PendingAction = pendingActionOf(action)
	}
	return out, nil
}

func workItemOf(w domain.WorkItem, pending *PendingAction) WorkItem {
	return WorkItem{ID: w.ID, Type: w.Type, Title: w.Title, Instruction: w.Instruction, Status: w.Status, Reason: w.Reason,
		FlowReference: WorkItemFlowReference{Name: w.FlowName, Version: w.FlowVersion, Draft: w.FlowDraft}, FlowRunID: w.FlowRunID, PendingAction: pending,
		Correlation: Correlation{InteractionID: w.InteractionID, WorkTaskID: w.WorkTaskID, WorkExecutionID: w.ID, FlowRunID: w.FlowRunID},
		CreatedAt:   w.CreatedAt, UpdatedAt: w.UpdatedAt}
}

func pendingActionOf(a *domain.PendingAction) *PendingAction {
	if a == nil {
		return nil
	}
	out := &PendingAction{ID: a.ID, Step: a.Step, Kind: a.Kind, Prompt: a.Prompt, Options: a.Options, Status: a.Status,
		ExpiresAt: a.ExpiresAt, ContinuationStep: a.ContinuationStep, Version: a.Version, AnsweredBy: a.AnsweredBy, Answer: a.Answer,
		OnExpiry: a.OnExpiry, Resolution: a.Resolution, Call: a.Call, Budget: a.Budget}
	if !a.EscalatedAt.IsZero() {
		out.EscalatedAt = &a.EscalatedAt
	}
	return out
}

func decoded(raw json.RawMessage) any {
	// The stored JSON is answered as it is, not decoded into maps to be encoded again: that was
	// most of a run's answer's garbage, and numbers past float64's precision came out rounded.
	if len(raw) == 0 || !json.Valid(raw) || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	return raw
}

// deleteTerminalRun deletes a run of the request's workspace at the version its If-Match names
// (428 without, 412 when stale); deleteRun refuses a run that is not terminal.
func (s *routes) deleteTerminalRun(ctx context.Context, in httpapi.IfMatchInput, noun, runID string,
	deleteRun func(ctx context.Context, workspaceID, runID string, version int64) error) error {
	rc, err := s.workContext(ctx)
	if err != nil {
		return err
	}
	resourceVersion, err := in.RequiredResourceVersion()
	if err != nil {
		return err
	}
	version, err := strconv.ParseInt(resourceVersion, 10, 64)
	if err != nil {
		return httpapi.StaleETag(noun, runID)
	}
	if err := deleteRun(ctx, rc.WorkspaceID, runID, version); err != nil {
		if errors.Is(err, domain.ErrStale) {
			return httpapi.StaleETag(noun, runID)
		}
		return httpapi.Problem(err)
	}
	return nil
}
