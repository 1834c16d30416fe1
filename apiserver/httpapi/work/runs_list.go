package work

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/work"
)

// registerRunList lists the workspace's FlowRuns: the technical runs that an operator's cleanup
// lists apart from the Tasks they served.
func (s *routes) registerRunList() {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-flow-runs", Method: http.MethodGet, Path: "/api/flowRuns", Tags: []string{tagWork},
		Summary:     "List the workspace's FlowRuns",
		Description: "Newest first, a page at a time: pass the last item's createdAt as before for the next. state filters (Completed,Failed,Cancelled for cleanup).",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		httpapi.WorkspaceInput
		State  string    `query:"state" maxLength:"256" doc:"Comma-separated states to keep"`
		Before time.Time `query:"before" doc:"Only the runs created before this time"`
		Take   int       `query:"take" minimum:"1" maximum:"100" default:"50"`
	}) (*httpapi.ListOutput[FlowRun], error) {
		rc, err := s.workContext(ctx)
		if err != nil {
			return nil, err
		}
		f := domain.RunFilter{Before: in.Before, Take: in.Take}
		if in.State != "" {
			for _, st := range strings.Split(in.State, ",") {
				switch st = strings.TrimSpace(st); st {
				case domain.StatePending, domain.StateRunning, domain.StateActionRequired, domain.StatePaused, domain.StateCompleted, domain.StateFailed, domain.StateCancelled:
					f.States = append(f.States, st)
				default:
					return nil, huma.Error422UnprocessableEntity("the query is invalid", &huma.ErrorDetail{Location: "query.state",
						Message: "states are Pending, Running, ActionRequired, Paused, Completed, Failed, Cancelled"})
				}
			}
		}
		runs, err := s.Work().Runs(ctx, rc.WorkspaceID, f)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := make([]FlowRun, 0, len(runs))
		for _, r := range runs {
			view, err := s.flowRunOf(ctx, r)
			if err != nil {
				return nil, err
			}
			out = append(out, view)
		}
		return httpapi.ItemsOutput(out), nil
	})
}
