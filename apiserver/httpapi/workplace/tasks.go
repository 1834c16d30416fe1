package workplace

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/work"
	domain "platform.dev/platform/apiserver/workplace"
)

// Task is the public projection of work: what it is, where it stands, and what can be done with
// it now. It shows no run id, node name, storage key or provider detail.
type Task struct {
	ID            string      `json:"id"`
	Title         string      `json:"title"`
	State         string      `json:"state" enum:"pending,running,paused,action-required,completed,failed,cancelled"`
	Reason        string      `json:"reason,omitempty" doc:"Why it failed or was cancelled, for people"`
	InteractionID string      `json:"interactionId,omitempty" doc:"The conversation it belongs to; absent for an autonomous Task"`
	Visible       bool        `json:"visible" doc:"Whether its reference appears in its conversation (the Entry's task.display, or the automatic rules)"`
	Actions       TaskActions `json:"actions" doc:"What can be done with it now"`
	// PendingActions are answered in the Task: an autonomous Task's through its own route, a
	// conversation's through the conversation's.
	PendingActions []InteractionPendingAction `json:"pendingActions,omitempty" doc:"The open questions it waits on (id, kind, prompt, options, expiry); never a token"`
	Version        string                     `json:"version" doc:"Its ETag, for the If-Match of a delete"`
	CreatedAt      time.Time                  `json:"createdAt"`
	UpdatedAt      time.Time                  `json:"updatedAt"`
	EndedAt        *time.Time                 `json:"endedAt,omitempty"`
	Usage          *work.ModelUsage           `json:"usage,omitempty" doc:"The model usage of its runs: model calls, input, output and total tokens, and cost (when priced)"`
}

// TaskActions say which operations apply to a Task in its state.
type TaskActions struct {
	Pause  bool `json:"pause"`
	Resume bool `json:"resume"`
	Cancel bool `json:"cancel"`
	Delete bool `json:"delete" doc:"Only a completed, failed or cancelled Task can be deleted"`
}

func taskETag(t domain.Task) string { return strconv.FormatInt(t.Version, 10) }

func taskOf(t domain.Task) Task {
	out := Task{ID: t.ID, Title: t.Title, State: t.State, Reason: t.Reason, InteractionID: t.InteractionID, Visible: t.Visible,
		Version: taskETag(t), CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	if !t.EndedAt.IsZero() {
		ended := t.EndedAt
		out.EndedAt = &ended
	}
	switch t.State {
	case domain.TaskPending, domain.TaskRunning, domain.TaskActionRequired:
		out.Actions.Pause, out.Actions.Cancel = true, true
	case domain.TaskPaused:
		out.Actions.Resume, out.Actions.Cancel = true, true
	default:
		out.Actions.Delete = true
	}
	return out
}

// TaskActivity is one functional progress item of a Task.
type TaskActivity struct {
	Seq         int64     `json:"seq"`
	Kind        string    `json:"kind" enum:"turn,question,run" doc:"A participant's turn, a question, the run's own course"`
	Phase       string    `json:"phase" enum:"started,completed,waiting,answered,failed,cancelled,paused,resumed,expired,reminded,escalated,refused"`
	Label       string    `json:"label" doc:"A functional label: Preparing and Prepared, or the Flow step's display name"`
	Participant string    `json:"participant,omitempty" doc:"The participant of a turn, only for Entries whose participants are visible"`
	CreatedAt   time.Time `json:"createdAt"`
}

// TaskResult is a durable Result of a Task.
type TaskResult struct {
	ID        string    `json:"id"`
	Seq       int64     `json:"seq"`
	Action    string    `json:"action" doc:"The functional action the work ended with"`
	Text      string    `json:"text,omitempty" doc:"The readable result"`
	Output    any       `json:"output,omitempty" doc:"The durable Result payload"`
	CreatedAt time.Time `json:"createdAt"`
}

// TaskArtifact is a downloadable deliverable of a Task.
type TaskArtifact struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	MediaType string    `json:"mediaType"`
	Length    int64     `json:"length"`
	CreatedAt time.Time `json:"createdAt"`
}

type TaskPath struct {
	WorkspacePath
	ID string `path:"id" maxLength:"64" doc:"Task id"`
}

type taskOutput struct {
	ETag string `header:"ETag"`
	Body Task
}

func (s *routes) registerTasks() {
	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "list-tasks", Method: http.MethodGet, Path: "/api/workspaces/{workspace}/tasks", Tags: []string{tagTasks},
		Summary: "List the workspace's Tasks", Description: "Most recently updated first, a page at a time: pass the last item's updatedAt as before for the next.",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		WorkspacePath
		State  string    `query:"state" maxLength:"256" doc:"Comma-separated states to keep (completed,failed,cancelled for cleanup)"`
		Before time.Time `query:"before" doc:"Only Tasks updated before this time"`
		Take   int       `query:"take" minimum:"1" maximum:"100" default:"50"`
	}) (*httpapi.ListOutput[Task], error) {
		rc, _ := httpapi.RequestContextFrom(ctx)
		f := domain.TaskFilter{Before: in.Before, Take: in.Take}
		if in.State != "" {
			for _, st := range strings.Split(in.State, ",") {
				switch st = strings.TrimSpace(st); st {
				case domain.TaskPending, domain.TaskRunning, domain.TaskPaused, domain.TaskActionRequired, domain.TaskCompleted, domain.TaskFailed, domain.TaskCancelled:
					f.States = append(f.States, st)
				default:
					return nil, huma.Error422UnprocessableEntity("the query is invalid", &huma.ErrorDetail{Location: "query.state",
						Message: "states are pending, running, paused, action-required, completed, failed, cancelled"})
				}
			}
		}
		tasks, err := s.workplace.Tasks(ctx, rc.WorkspaceID, f)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := httpapi.ListOf(tasks, taskOf)
		items := make([]*Task, len(out.Body.Items))
		for n := range out.Body.Items {
			items[n] = &out.Body.Items[n]
		}
		if err := s.withQuestions(ctx, items...); err != nil {
			return nil, err
		}
		if err := s.withUsage(ctx, items...); err != nil {
			return nil, err
		}
		return out, nil
	})

	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "get-task", Method: http.MethodGet, Path: "/api/workspaces/{workspace}/tasks/{id}", Tags: []string{tagTasks},
		Summary: "Read a Task",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *TaskPath) (*taskOutput, error) {
		t, err := s.task(ctx, in.ID)
		if err != nil {
			return nil, err
		}
		return s.taskOutput(ctx, t)
	})

	for _, op := range []struct{ name, summary string }{
		{"pause", "Pause a Task: its work stops at its next transition; a question stays answerable"},
		{"resume", "Resume a paused Task"},
		{"cancel", "Cancel a Task"},
	} {
		huma.Register(s.API(), s.operation(huma.Operation{
			OperationID: op.name + "-task", Method: http.MethodPost, Path: "/api/workspaces/{workspace}/tasks/{id}/" + op.name, Tags: []string{tagTasks},
			Summary: op.summary, Description: "Offered only where it applies (see the Task's actions); elsewhere 409.",
			Errors: []int{http.StatusConflict},
		}, httpapi.PolicyRunsExecute), func(ctx context.Context, in *TaskPath) (*taskOutput, error) {
			t, err := s.task(ctx, in.ID)
			if err != nil {
				return nil, err
			}
			rc, _ := httpapi.RequestContextFrom(ctx)
			switch op.name {
			case "pause":
				_, err = s.Work().Pause(ctx, rc.WorkspaceID, t.CurrentRunID)
			case "resume":
				_, err = s.Work().Resume(ctx, rc.WorkspaceID, t.CurrentRunID)
				s.wakeExecutor()
			case "cancel":
				_, err = s.Work().Cancel(ctx, rc.WorkspaceID, t.CurrentRunID, "cancelled by a person")
			}
			if err != nil {
				return nil, httpapi.Problem(err)
			}
			if t, err = s.task(ctx, in.ID); err != nil {
				return nil, err
			}
			return s.taskOutput(ctx, t)
		})
	}

	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "delete-task", Method: http.MethodDelete, Path: "/api/workspaces/{workspace}/tasks/{id}", Tags: []string{tagTasks},
		Summary: "Delete a completed, failed or cancelled Task",
		Description: "Needs the Task's current ETag in If-Match (428 without, 412 when stale). Pending, running, paused and " +
			"action-required Tasks are protected (409). Removes, in one step, its runs and their history, pending actions, " +
			"Results, artifact metadata and stored bytes, and its notifications. A conversation that pointed to it keeps its " +
			"messages and is detached from it.",
		DefaultStatus: http.StatusNoContent,
		Errors:        []int{http.StatusConflict, http.StatusPreconditionRequired, http.StatusPreconditionFailed},
	}, httpapi.PolicyRunsDelete), func(ctx context.Context, in *struct {
		TaskPath
		httpapi.IfMatchInput
	}) (*struct{}, error) {
		version, err := in.RequiredResourceVersion()
		if err != nil {
			return nil, err
		}
		v, err := strconv.ParseInt(version, 10, 64)
		if err != nil {
			return nil, httpapi.StaleETag("task", in.ID)
		}
		rc, _ := httpapi.RequestContextFrom(ctx)
		err = s.workplace.DeleteTask(ctx, rc.WorkspaceID, in.ID, v)
		switch {
		case errors.Is(err, domain.ErrStale):
			return nil, httpapi.StaleETag("task", in.ID)
		case errors.Is(err, domain.ErrProtected):
			return nil, huma.Error409Conflict(err.Error())
		}
		return nil, httpapi.Problem(err)
	})

	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "list-task-activities", Method: http.MethodGet, Path: "/api/workspaces/{workspace}/tasks/{id}/activities", Tags: []string{tagTasks},
		Summary: "List a Task's activities",
		Description: "detailed keeps the full functional history; compact keeps the current activity only, and drops the " +
			"lifecycle markers already conveyed by the answer, the question, the Result or the artifact.",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		TaskPath
		Detail string `query:"detail" enum:"compact,detailed" default:"detailed"`
	}) (*httpapi.ListOutput[TaskActivity], error) {
		t, err := s.task(ctx, in.ID)
		if err != nil {
			return nil, err
		}
		activities, err := s.workplace.Activities(ctx, t.ID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		if in.Detail == "compact" {
			activities = domain.CompactActivities(activities)
		}
		return httpapi.ListOf(activities, func(a domain.Activity) TaskActivity {
			return TaskActivity{Seq: a.Seq, Kind: a.Kind, Phase: a.Phase, Label: a.Label, Participant: a.Participant, CreatedAt: a.CreatedAt}
		}), nil
	})

	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "list-task-results", Method: http.MethodGet, Path: "/api/workspaces/{workspace}/tasks/{id}/results", Tags: []string{tagTasks},
		Summary: "List a Task's Results", Description: "One per run of the Task that ended with a result, oldest first.",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *TaskPath) (*httpapi.ListOutput[TaskResult], error) {
		t, err := s.task(ctx, in.ID)
		if err != nil {
			return nil, err
		}
		results, err := s.workplace.Results(ctx, t.ID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return httpapi.ListOf(results, func(r domain.Result) TaskResult {
			out := TaskResult{ID: r.ID, Seq: r.Seq, Action: r.Action, Text: r.Text, CreatedAt: r.CreatedAt}
			var payload domain.RunOutput
			if len(r.Payload) > 0 && json.Unmarshal(r.Payload, &payload) == nil {
				out.Output = payload.Output
			}
			return out
		}), nil
	})

	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "list-task-artifacts", Method: http.MethodGet, Path: "/api/workspaces/{workspace}/tasks/{id}/artifacts", Tags: []string{tagTasks},
		Summary: "List a Task's artifacts", Description: "Metadata only; the bytes download from .../artifacts/{artifactId}/content.",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *TaskPath) (*httpapi.ListOutput[TaskArtifact], error) {
		t, err := s.task(ctx, in.ID)
		if err != nil {
			return nil, err
		}
		artifacts, err := s.workplace.Artifacts(ctx, t.ID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return httpapi.ListOf(artifacts, artifactOf), nil
	})

	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "download-task-artifact", Method: http.MethodGet, Path: "/api/workspaces/{workspace}/tasks/{id}/artifacts/{artifactId}/content",
		Tags: []string{tagTasks}, Summary: "Download an artifact's bytes",
		Description: "Streams the bytes with their media type and length, as an attachment named after the artifact.",
		Responses:   map[string]*huma.Response{"200": {Description: "The artifact's bytes", Content: map[string]*huma.MediaType{"application/octet-stream": {}}}},
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		TaskPath
		ArtifactID string `path:"artifactId" maxLength:"64"`
	}) (*huma.StreamResponse, error) {
		rc, _ := httpapi.RequestContextFrom(ctx)
		a, err := s.workplace.Artifact(ctx, rc.WorkspaceID, in.ID, in.ArtifactID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		r, err := s.workplace.Blobs.Open(ctx, a.StorageKey)
		if err != nil {
			return nil, huma.Error404NotFound("the artifact's bytes are gone")
		}
		return &huma.StreamResponse{Body: func(hctx huma.Context) {
			defer r.Close()
			hctx.SetHeader("Content-Type", a.MediaType)
			hctx.SetHeader("Content-Length", strconv.FormatInt(a.Length, 10))
			hctx.SetHeader("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": a.Name}))
			hctx.SetHeader("X-Content-Type-Options", "nosniff")
			hctx.SetStatus(http.StatusOK)
			_, _ = io.Copy(hctx.BodyWriter(), r)
		}}, nil
	})

	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "answer-task-pending-action", Method: http.MethodPost,
		Path: "/api/workspaces/{workspace}/tasks/{id}/pending-actions/{actionId}/responses", Tags: []string{tagTasks},
		Summary: "Answer a question of an autonomous Task",
		Description: "For work without a conversation (a Trigger's): the Task's pending action is answered by a person of the " +
			"workspace who may start runs, without a resume token, since nobody received one. A question of a conversation " +
			"is answered in the conversation (404 here).",
		Errors:       []int{http.StatusBadRequest, http.StatusForbidden, http.StatusConflict},
		MaxBodyBytes: maxAnswerBytes,
	}, httpapi.PolicyRunsExecute), func(ctx context.Context, in *struct {
		TaskPath
		ActionID string `path:"actionId" maxLength:"64"`
		Body     AnswerRequest
	}) (*struct{ Body InteractionPendingAction }, error) {
		t, err := s.task(ctx, in.ID)
		if err != nil {
			return nil, err
		}
		if t.InteractionID != "" {
			return nil, huma.Error404NotFound("the Task's questions are answered in its conversation")
		}
		rc, _ := httpapi.RequestContextFrom(ctx)
		runID, err := s.workplace.PendingActionOf(ctx, rc.WorkspaceID, "", t.ID, in.ActionID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		answered, _, _, err := s.answer(ctx, rc, runID, in.ActionID, in.Body, false, 0)
		if err != nil {
			return nil, err
		}
		return &struct{ Body InteractionPendingAction }{Body: *pendingActionOf(&answered)}, nil
	})
}

// taskOutput is the read of a Task, with the questions it waits on.
func (s *routes) taskOutput(ctx context.Context, t domain.Task) (*taskOutput, error) {
	out := &taskOutput{ETag: httpapi.ETag(taskETag(t)), Body: taskOf(t)}
	if err := s.withUsage(ctx, &out.Body); err != nil {
		return nil, err
	}
	return out, s.withQuestions(ctx, &out.Body)
}

func (s *routes) task(ctx context.Context, id string) (domain.Task, error) {
	rc, _ := httpapi.RequestContextFrom(ctx)
	t, err := s.workplace.Task(ctx, rc.WorkspaceID, id)
	if err != nil {
		return t, httpapi.Problem(err)
	}
	return t, nil
}

func artifactOf(a domain.Artifact) TaskArtifact {
	return TaskArtifact{ID: a.ID, Name: a.Name, MediaType: a.MediaType, Length: a.Length, CreatedAt: a.CreatedAt}
}
