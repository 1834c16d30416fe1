package work

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-logr/logr"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/notify"
	domain "platform.dev/platform/apiserver/work"
	"platform.dev/platform/internal/config"
)

// heartbeat is how often an idle stream sends a comment line, so that proxies and the
// listener's connection cap see a live connection, and a client that went away is noticed.
const heartbeat = 15 * time.Second

// Defaults of the stream caps (Platform:Streams:MaxPerPrincipal, Platform:Streams:Max).
const (
	defaultStreamsPerPrincipal = 16
	defaultStreams             = 1024
)

// streamSlots bounds the run streams open at once, per Principal and in all, so that one
// caller cannot hold what others need.
type streamSlots struct {
	perPrincipal, total int

	mu   sync.Mutex
	open map[string]int
	all  int
}

func newStreamSlots(cfg *config.Config, log logr.Logger) *streamSlots {
	setting := func(key string, def int) int {
		v := cfg.Get(key)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1_000_000 {
			log.Info("ignoring an invalid setting; using the default", "setting", key, "default", def)
			return def
		}
		return n
	}
	return &streamSlots{perPrincipal: setting("Platform:Streams:MaxPerPrincipal", defaultStreamsPerPrincipal),
		total: setting("Platform:Streams:Max", defaultStreams), open: map[string]int{}}
}

// acquire takes a slot for principal, or answers 429.
func (l *streamSlots) acquire(principal string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.open[principal] >= l.perPrincipal:
		return nil, huma.Error429TooManyRequests(fmt.Sprintf("at most %d run streams are open at once per caller; close one first", l.perPrincipal))
	case l.all >= l.total:
		return nil, huma.Error429TooManyRequests("the server holds as many run streams as it serves; try again later")
	}
	l.open[principal]++
	l.all++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.open[principal]--; l.open[principal] == 0 {
				delete(l.open, principal)
			}
			l.all--
		})
	}, nil
}

func (s *routes) registerRunStream() {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "stream-flow-run-events", Method: http.MethodGet, Path: "/api/flowRuns/{runId}/stream", Tags: []string{tagWork},
		Summary: "Stream the history of a FlowRun (server-sent events)",
		Description: "Replays the run's persisted events, then sends new ones as they are persisted, as server-sent events whose " +
			"id is the event's sequence number, whose event name is its type and whose data is the event (as in the history " +
			"route). A client that reconnects with Last-Event-ID resumes after that event. The stream ends once the run is " +
			"Completed, Failed or Cancelled and every event was sent. A caller holds at most Platform:Streams:MaxPerPrincipal " +
			"streams at once (16 by default) and the server Platform:Streams:Max (1,024); beyond, 429.",
		Errors: []int{http.StatusTooManyRequests},
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
		release, err := s.streams.acquire(rc.PrincipalID)
		if err != nil {
			return nil, err
		}
		return &huma.StreamResponse{Body: func(hctx huma.Context) {
			defer release()
			s.streamRun(hctx, rc.WorkspaceID, in.RunID, after)
		}}, nil
	})
}

// streamRun sends the run's events after the sequence number after, then each new one as its
// transition commits: woken by the run's topic, never polling.
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
	ticker := time.NewTicker(heartbeat)
	defer ticker.Stop()
	var sub *notify.Subscription
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	for {
		if sub == nil {
			// Subscribed before the read, so that a change between the read and the wait wakes it.
			var err error
			if sub, err = s.Work().Changes().Subscribe(domain.RunTopic(runID)); err != nil {
				return // the hub is full: the client reconnects with Last-Event-ID
			}
		}
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
			data, _ := json.Marshal(FlowRunEvent{Seq: e.Seq, Type: e.Type, Step: e.Step, Attempt: e.Attempt, State: e.State, Reason: e.Reason, Usage: e.Usage, CreatedAt: e.CreatedAt})
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, data); err != nil {
				return
			}
			after = e.Seq
		}
		flush()
		if domain.Terminal(run.State) {
			return
		}
	wait:
		select {
		case <-ctx.Done():
			return
		case <-s.Stopping():
			return
		case <-ticker.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flush()
			goto wait
		case _, ok := <-sub.Events():
			if !ok {
				sub = nil // dropped for falling behind: subscribe again and re-read
			}
		}
	}
}
