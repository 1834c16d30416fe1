package work

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/work"
)

// RuntimeRunRequest is the body of POST /api/runtime/runs.
type RuntimeRunRequest struct {
	Agent     RuntimeAgentReference `json:"agent"`
	Input     RuntimeInput          `json:"input"`
	Execution *RuntimeExecution     `json:"execution,omitempty"`
	Origin    string                `json:"origin,omitempty" maxLength:"256" doc:"Who or what asked for the run, for correlation"`
	Overrides *RuntimeOverrides     `json:"overrides,omitempty" doc:"Only temperature and maxOutputTokens may be overridden"`
}

// RuntimeAgentReference names the agent of a Runtime Run.
type RuntimeAgentReference struct {
	ResourceID string `json:"resourceId" minLength:"1" maxLength:"64" doc:"The agent's server-generated id (metadata.uid)"`
	Version    string `json:"version,omitempty" maxLength:"20" doc:"The agent's version (metadata.generation); omitted runs the current one"`
}

// RuntimeInput is what the agent is asked.
type RuntimeInput struct {
	Messages []domain.Message `json:"messages" minItems:"1" maxItems:"256"`
}

// RuntimeExecution says how the run executes. Runs are always processed asynchronously.
type RuntimeExecution struct {
	Mode           string `json:"mode,omitempty" maxLength:"64" doc:"Execution mode; recorded (async when omitted)"`
	TimeoutSeconds int    `json:"timeoutSeconds,omitempty" minimum:"0" maximum:"600" doc:"Bound of one agent call; 60 when omitted"`
}

// RuntimeOverrides are the only run-time overrides of the agent's model settings.
type RuntimeOverrides struct {
	Temperature     *float64 `json:"temperature,omitempty" minimum:"0" maximum:"2"`
	MaxOutputTokens *int64   `json:"maxOutputTokens,omitempty" minimum:"1" maximum:"1000000"`
}

// RuntimeRun is the status of a Runtime Run.
type RuntimeRun struct {
	ID            string           `json:"id"`
	Status        string           `json:"status" enum:"Pending,Running,Completed,Failed"`
	Agent         RuntimeRunAgent  `json:"agent"`
	Execution     RuntimeExecution `json:"execution"`
	Origin        string           `json:"origin,omitempty"`
	Correlation   Correlation      `json:"correlation" doc:"The chain above the run, when work created it; runtimeExecutionId is the run's id"`
	ModelProvider string           `json:"modelProvider,omitempty" doc:"The model provider that answered"`
	ResolvedModel string           `json:"resolvedModel,omitempty" doc:"The model that answered"`
	Response      any              `json:"response,omitempty" doc:"The final response: action, content and, for a choice, options"`
	Error         string           `json:"error,omitempty" doc:"Why the run failed, or why the last attempt was retried"`
	Attempt       int              `json:"attempt"`
	Version       int64            `json:"version" doc:"Changes with every transition; the ETag"`
	CreatedAt     time.Time        `json:"createdAt"`
	UpdatedAt     time.Time        `json:"updatedAt"`
	CompletedAt   *time.Time       `json:"completedAt,omitempty"`
}

// RuntimeRunAgent is the agent a Runtime Run invokes.
type RuntimeRunAgent struct {
	ResourceID string `json:"resourceId"`
	Name       string `json:"name"`
	Version    string `json:"version,omitempty"`
}

type runtimeRunOutput struct {
	Status int
	ETag   string `header:"ETag"`
	Body   RuntimeRun
}

func (s *routes) registerRuntime() {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "create-runtime-run", Method: http.MethodPost, Path: "/api/runtime/runs", Tags: []string{tagRuntime},
		Summary: "Create a durable Runtime Run of an agent", DefaultStatus: http.StatusAccepted,
		Description: "Records the run (202) and processes it asynchronously: read it with GET /api/runtime/runs/{id}. An agent " +
			"that the workspace does not have, or a version that is not the agent's current one, is 422. A timeout or a " +
			"transient provider failure is retried with backoff, then fails the run with a reason.",
		Errors: []int{http.StatusUnprocessableEntity},
	}, httpapi.PolicyRunsExecute), func(ctx context.Context, in *struct {
		httpapi.WorkspaceInput
		Body RuntimeRunRequest
	}) (*runtimeRunOutput, error) {
		rc, err := s.workContext(ctx)
		if err != nil {
			return nil, err
		}
		agents := &platformv1.AgentList{}
		if err := s.Kube().List(ctx, agents, client.InNamespace(rc.Namespace)); err != nil {
			return nil, httpapi.Problem(err)
		}
		var agent *platformv1.Agent
		for i := range agents.Items {
			if string(agents.Items[i].UID) == in.Body.Agent.ResourceID {
				agent = &agents.Items[i]
			}
		}
		if agent == nil {
			return nil, httpapi.FieldErrors(field.ErrorList{field.NotFound(field.NewPath("agent", "resourceId"), field.OmitValueType{})})
		}
		if v := in.Body.Agent.Version; v != "" && v != strconv.FormatInt(agent.Generation, 10) {
			return nil, httpapi.FieldErrors(field.ErrorList{field.Invalid(field.NewPath("agent", "version"), field.OmitValueType{},
				"the agent is at version "+strconv.FormatInt(agent.Generation, 10)+"; earlier versions cannot run")})
		}
		exec := RuntimeExecution{Mode: "async"}
		if in.Body.Execution != nil {
			exec.TimeoutSeconds = in.Body.Execution.TimeoutSeconds
			if in.Body.Execution.Mode != "" {
				exec.Mode = in.Body.Execution.Mode
			}
		}
		var overrides domain.RuntimeOverrides
		if o := in.Body.Overrides; o != nil {
			overrides = domain.RuntimeOverrides{Temperature: o.Temperature, MaxOutputTokens: o.MaxOutputTokens}
		}
		run, err := s.Work().CreateRuntimeRun(ctx, domain.RuntimeRun{Context: rc, AgentName: agent.Name, AgentUID: string(agent.UID),
			AgentVersion: in.Body.Agent.Version, Messages: in.Body.Input.Messages, Mode: exec.Mode, TimeoutSeconds: exec.TimeoutSeconds,
			Origin: in.Body.Origin, Overrides: overrides})
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		s.wakeExecutor()
		return &runtimeRunOutput{Status: http.StatusAccepted, ETag: httpapi.ETag(strconv.FormatInt(run.Version, 10)), Body: runtimeRunOf(run)}, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-runtime-run", Method: http.MethodGet, Path: "/api/runtime/runs/{id}", Tags: []string{tagRuntime},
		Summary: "Read a Runtime Run", Description: "Its status, the model provider and model that answered, and the final response. Another workspace's run is 404.",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		httpapi.WorkspaceInput
		ID string `path:"id" maxLength:"64"`
	}) (*runtimeRunOutput, error) {
		rc, err := s.workContext(ctx)
		if err != nil {
			return nil, err
		}
		run, err := s.Work().RuntimeRun(ctx, rc.WorkspaceID, in.ID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return &runtimeRunOutput{Status: http.StatusOK, ETag: httpapi.ETag(strconv.FormatInt(run.Version, 10)), Body: runtimeRunOf(run)}, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "delete-runtime-run", Method: http.MethodDelete, Path: "/api/runtime/runs/{runId}", Tags: []string{tagRuntime},
		Summary: "Delete a terminal Runtime Run", DefaultStatus: http.StatusNoContent,
		Description: "Only Completed and Failed runs (409 otherwise), with the current ETag in If-Match (428 without, 412 when stale).",
		Errors:      []int{http.StatusConflict, http.StatusPreconditionFailed, http.StatusPreconditionRequired},
	}, httpapi.PolicyRunsDelete), func(ctx context.Context, in *struct {
		httpapi.WorkspaceInput
		httpapi.IfMatchInput
		RunID string `path:"runId" maxLength:"64"`
	}) (*struct{}, error) {
		return nil, s.deleteTerminalRun(ctx, in.IfMatchInput, "runtime run", in.RunID, s.Work().DeleteRuntimeRun)
	})
}

func runtimeRunOf(r domain.RuntimeRun) RuntimeRun {
	out := RuntimeRun{ID: r.ID, Status: r.Status, Agent: RuntimeRunAgent{ResourceID: r.AgentUID, Name: r.AgentName, Version: r.AgentVersion},
		Execution: RuntimeExecution{Mode: r.Mode, TimeoutSeconds: r.TimeoutSeconds}, Origin: r.Origin, ModelProvider: r.ModelProvider,
		Correlation: Correlation{InteractionID: r.InteractionID, WorkTaskID: r.WorkTaskID, WorkExecutionID: r.WorkExecutionID,
			FlowRunID: r.FlowRunID, RuntimeExecutionID: r.ID},
		ResolvedModel: r.ResolvedModel, Response: decoded(r.Response), Error: r.Error, Attempt: r.Attempt, Version: r.Version,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if !r.CompletedAt.IsZero() {
		out.CompletedAt = &r.CompletedAt
	}
	return out
}
