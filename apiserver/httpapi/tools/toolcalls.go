package tools

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/work"
)

// ToolCall is one tool call of a run: what the model asked for and what it read back.
type ToolCall struct {
	Step                 string     `json:"step" doc:"The Agent step that made the call"`
	Seq                  int        `json:"seq" doc:"Number of the call in its step, from 1"`
	Turn                 int        `json:"turn" doc:"Number of the model answer that asked for it"`
	CallID               string     `json:"callId" doc:"The model's id of the call"`
	FunctionName         string     `json:"functionName" doc:"The function the model called"`
	Tool                 string     `json:"tool,omitempty" doc:"The Tool the call went to; absent when the model named none the agent may call"`
	ToolProvider         string     `json:"toolProvider,omitempty"`
	Arguments            string     `json:"arguments" doc:"The arguments as the model wrote them"`
	Status               string     `json:"status" enum:"requested,started,awaitingApproval,approved,rejected,completed"`
	Executions           int        `json:"executions" doc:"How many times the call was sent to its provider (more than once after a crash or an outage)"`
	Result               string     `json:"result,omitempty" doc:"What the model read back"`
	IsError              bool       `json:"isError,omitempty" doc:"The result is an error: the tool's, a refusal, or a rejection"`
	Truncated            bool       `json:"truncated,omitempty" doc:"The result was cut at the size limit"`
	DurationMilliseconds int64      `json:"durationMilliseconds"`
	IdempotencyKey       string     `json:"idempotencyKey" doc:"Sent with every execution of the call"`
	PendingActionID      string     `json:"pendingActionId,omitempty" doc:"The approval the call waited for"`
	DecidedBy            string     `json:"decidedBy,omitempty" doc:"The Principal who approved or rejected it"`
	DecisionReason       string     `json:"decisionReason,omitempty"`
	CreatedAt            time.Time  `json:"createdAt"`
	CompletedAt          *time.Time `json:"completedAt,omitempty"`
}

func toolCallOf(c work.ToolCall) ToolCall {
	out := ToolCall{Step: c.Step, Seq: c.Seq, Turn: c.Turn, CallID: c.CallID, FunctionName: c.FunctionName, Tool: c.Tool, ToolProvider: c.Provider,
		Arguments: c.Arguments, Status: c.Status, Executions: c.Executions, Result: c.Result, IsError: c.IsError, Truncated: c.Truncated,
		DurationMilliseconds: c.Duration.Milliseconds(), IdempotencyKey: c.IdempotencyKey, PendingActionID: c.PendingActionID,
		DecidedBy: c.DecidedBy, DecisionReason: c.DecisionReason, CreatedAt: c.CreatedAt}
	if !c.CompletedAt.IsZero() {
		t := c.CompletedAt
		out.CompletedAt = &t
	}
	return out
}

func (s *routes) registerToolCalls() {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-flow-run-tool-calls", Method: http.MethodGet, Path: "/api/flowRuns/{runId}/tool-calls", Tags: []string{tagTools},
		Summary: "List the tool calls of a FlowRun",
		Description: "Every tool call its Agent steps' models asked for, in order, with arguments, result, status, duration and " +
			"idempotency key. The run's events (list-flow-run-events) name each call and what happened to it; this is where the " +
			"arguments and results are. Another workspace's run is 404.",
		Errors: []int{http.StatusServiceUnavailable},
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		httpapi.WorkspaceInput
		RunID string `path:"runId" maxLength:"64" doc:"Id of the FlowRun"`
	}) (*httpapi.ListOutput[ToolCall], error) {
		if s.Work() == nil {
			return nil, huma.Error503ServiceUnavailable("the Work store is not configured on this server")
		}
		rc, _ := httpapi.RequestContextFrom(ctx)
		if _, err := s.Work().Run(ctx, rc.WorkspaceID, in.RunID); err != nil {
			return nil, httpapi.Problem(err)
		}
		calls, err := s.Work().ToolCalls(ctx, in.RunID, "")
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return httpapi.ListOf(calls, toolCallOf), nil
	})
}
