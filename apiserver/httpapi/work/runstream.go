package work

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/work"
)

// streamPoll is how often a run detail stream looks for new events. The store is the source of
// truth on every replica, so a stream sees transitions made by any worker.
const streamPoll = 200 * time.Millisecond

func (s *routes) registerRunStream() {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "stream-flow-run-events", Method: http.MethodGet, Path: "/api/flowRuns/{runId}/stream", Tags: []string{tagWork},
		Summary: "Stream the history of a FlowRun (server-sent events)",
		Description: "Replays the run's persisted events, then sends new ones as they are persisted, as server-sent events whose " +
			"id is the event's sequence number, whose event name is its type and whose data is the event (as in the history " +
			"route). A client that reconnects with Last-Event-ID resumes after that event. The stream ends once the run is " +
			"Completed, Failed or Cancelled and every event was sent.",
		Responses: map[string]*huma.Response{"200": {Description: "A stream of events",
			Content: map[string]*huma.MediaType{"text/event-stream": {Schema: &huma.Schema{Type: "string"}}}}},
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		FlowRunInput
		LastEventID string `header:"Last-Event-ID" maxLength:"20" doc:"Sequence number of the last event received; the stream resumes after it"`
	}) (*huma.StreamResponse, error) {
		rc, err := s.workContext(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := s.Work().Run(ctx, rc.WorkspaceID, in.RunID); err != nil {
			return nil, httpapi.Problem(err)
		}
		var after int64
		if v := strings.TrimSpace(in.LastEventID); v != "" {
			if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
				return nil, huma.Error400BadRequest("Last-Event-ID must be the sequence number of an event")
			}
		}
		return &huma.StreamResponse{Body: func(hctx huma.Context) {
			s.streamRun(hctx, rc.WorkspaceID, in.RunID, after)
		}}, nil
	})
}

func (s *routes) streamRun(hctx huma.Context, workspaceID, runID string, after int64) {
	ctx := hctx.Context()
	hctx.SetHeader("Content-Type", "text/event-stream")
	hctx.SetHeader("Cache-Control", "no-cache")
	hctx.SetStatus(http.StatusOK)
	w := hctx.BodyWriter()
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	flush()
	for {
		// The state is read before the events: a run seen terminal has all its events persisted.
		run, err := s.Work().Run(ctx, workspaceID, runID)
		if err != nil {
			return // deleted meanwhile, or the client went away
		}
		events, err := s.Work().Events(ctx, runID, after)
		if err != nil {
			return
		}
		for _, e := range events {
			data, _ := json.Marshal(FlowRunEvent{Seq: e.Seq, Type: e.Type, Step: e.Step, Attempt: e.Attempt, State: e.State, Reason: e.Reason, CreatedAt: e.CreatedAt})
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, data); err != nil {
				return
			}
			after = e.Seq
		}
		flush()
		if domain.Terminal(run.State) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-s.Stopping():
			return
		case <-time.After(streamPoll):
		}
	}
}
