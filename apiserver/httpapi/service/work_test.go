package service_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	"platform.dev/platform/apiserver/executor"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/triggers"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/apiserver/workplace"
	"platform.dev/platform/internal/config"
)

// workServer is a Development-mode service API with a Work store and a running executor.
func workServer(t testing.TB, s *store.Store) *httptest.Server {
	t.Helper()
	return workServerWith(t, s, nil)
}

// workServerWith is workServer with its Workplace store adjusted by tune (a clock).
func workServerWith(t testing.TB, s *store.Store, tune func(*workplace.Store)) *httptest.Server {
	t.Helper()
	return workServerOn(t, s, kube, kube, nil, tune)
}

// workServerOn is workServerWith with the kube client given, the reader that runs resolve their
// Flow versions and agents with, and settings added to the configuration.
func workServerOn(t testing.TB, s *store.Store, kube client.Client, resolve client.Reader, settings map[string]string,
	tune func(*workplace.Store)) *httptest.Server {
	t.Helper()
	values := map[string]string{"Platform:Authentication:Mode": "Development"}
	maps.Copy(values, settings)
	cfg := config.FromMap(config.Testing, values)
	pk := client.Client(platformKube)
	if cached, ok := resolve.(executor.CacheFirst); ok && cached.Writes != nil {
		// As `platform serve` does: what the service API writes is read live until the cache shows it.
		kube, pk = cached.Writes.Track(kube), cached.Writes.Track(platformKube)
	}
	store := work.New(s)
	places := workplace.NewStore(s, store, workplace.FileArtifacts{Dir: filepath.Join(t.TempDir(), "artifacts")})
	store.Observer = places
	if tune != nil {
		tune(places)
	}
	authorize, err := httpapi.RunAuthorizer(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The executor's settings (Platform:Executor:*) are read as `platform serve` reads them. Tests
	// find the runs whose lease expired within 20 ms; a benchmark polls as `platform serve` does.
	poll := 20 * time.Millisecond
	if _, benchmark := t.(*testing.B); benchmark {
		poll = 0
	}
	opts, err := executor.OptionsFromConfig(cfg, executor.Options{Work: store, Resolver: executor.KubeResolver{Client: resolve},
		Provider: provider.DeterministicProvider{}, Authorize: authorize, Poll: poll, Artifacts: places.Blobs})
	if err != nil {
		t.Fatal(err)
	}
	exec, err := executor.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); exec.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	access, err := httpapi.TriggerAccess(cfg, nil, pk)
	if err != nil {
		t.Fatal(err)
	}
	api, err := service.New(httpapi.Options{Config: cfg, Kube: kube, PlatformKube: pk, Reads: resolve, Work: store, Workplace: places, Executor: exec,
		Triggers: &triggers.Service{DB: s, Work: store, Kube: pk, Access: access},
		Ready:    func(ctx context.Context) error { return env.Server().Ready(ctx) }})
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(api.Handler())
	t.Cleanup(server.Close)
	return server
}

var suffixes = map[string]int{}

// reportFlowSetup creates the agents and the published, active report flow of the issue's "Done
// when", with names unique to the test, and returns the flow's name.
func reportFlowSetup(t *testing.T, server *httptest.Server) string {
	t.Helper()
	g := NewWithT(t)
	suffixes[t.Name()]++
	sfx := fmt.Sprintf("%d%d", time.Now().UnixNano()%100000, suffixes[t.Name()])
	planner, confirmer, flow := "planner-"+sfx, "confirmer-"+sfx, "report-"+sfx
	for name, instructions := range map[string]string{
		planner:   `Plan the report.\n@requestChoice Which level of detail?\n@option brief Brief\n@option detailed Detailed`,
		confirmer: `@requestConfirmation Publish the report?`,
	} {
		r := call(t, server, http.MethodPost, "/api/agents", `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"`+name+`"},`+
			`"definition":{"instructions":"`+instructions+`"}}`)
		g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)
	}
	r := call(t, server, http.MethodPost, "/api/flows", `{"name":"`+flow+`","kind":"Orchestration","definition":{"steps":[`+
		`{"name":"in","type":"Input"},{"name":"choose","type":"Agent","agent":{"name":"`+planner+`"}},`+
		`{"name":"check","type":"Condition","expression":"steps.choose.answer == 'detailed'"},`+
		`{"name":"brief","type":"Transform","expression":"'brief'"},`+
		`{"name":"confirm","type":"Agent","agent":{"name":"`+confirmer+`"}},`+
		`{"name":"out","type":"Output","message":"Report ready","input":"{'title': input.title, 'level': steps.choose.answer, 'confirmed': steps.confirm.answer}"}],`+
		`"edges":[{"from":"in","to":"choose"},{"from":"choose","to":"check"},{"from":"check","to":"confirm","when":"true"},`+
		`{"from":"check","to":"brief","when":"false"},{"from":"brief","to":"confirm"},{"from":"confirm","to":"out"}]}}`)
	g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)
	r = call(t, server, http.MethodPost, "/api/flows/"+flow+"/versions", `{"version":"1.0.0","activate":true}`)
	g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)
	return flow
}

func submitWork(t *testing.T, server *httptest.Server, flowReference string) response {
	t.Helper()
	return call(t, server, http.MethodPost, "/api/work/workitems?waitSeconds=10",
		`{"type":"report","title":"Quarterly","instruction":"Prepare the quarterly report","flowReference":`+flowReference+`}`)
}

func field(body map[string]any, path ...string) any {
	var v any = body
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

func TestAWorkItemRunsTheReportFlowThroughTheWorkAPI(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		flow := reportFlowSetup(t, server)

		submitted := submitWork(t, server, `{"name":"`+flow+`"}`)
		g.Expect(submitted.status).To(Equal(http.StatusAccepted), "%v", submitted.body)
		token, _ := submitted.body["resumeToken"].(string)
		g.Expect(token).To(HavePrefix("prt_"))
		g.Expect(field(submitted.body, "workItem", "flowReference", "version")).To(Equal("1.0.0"), "active resolves to an exact version")
		g.Expect(field(submitted.body, "flowRun", "state")).To(Equal("ActionRequired"))
		g.Expect(field(submitted.body, "flowRun", "pendingAction", "kind")).To(Equal("choice"))
		itemID := field(submitted.body, "workItem", "id").(string)
		runID := field(submitted.body, "flowRun", "id").(string)
		actionID := field(submitted.body, "flowRun", "pendingAction", "id").(string)

		item := call(t, server, http.MethodGet, "/api/work/workitems/"+itemID, "")
		g.Expect(item.status).To(Equal(http.StatusOK))
		g.Expect(field(item.body, "pendingAction", "prompt")).To(Equal("Which level of detail?"))
		g.Expect(fmt.Sprint(item.body)).NotTo(ContainSubstring(token), "reads never carry the resume token")

		respond := func(action, tok, answer string) response {
			return call(t, server, http.MethodPost, "/api/flowRuns/"+runID+"/pending-actions/"+action+"/responses?waitSeconds=10",
				`{"resumeToken":"`+tok+`",`+answer+`}`)
		}
		expectProblem(g, respond(actionID, token+"x", `"value":"detailed"`), http.StatusBadRequest)
		expectProblem(g, respond(actionID, token, `"value":"enormous"`), http.StatusBadRequest)
		expectProblem(g, respond("unknown", token, `"value":"detailed"`), http.StatusNotFound)

		first := respond(actionID, token, `"value":"detailed"`)
		g.Expect(first.status).To(Equal(http.StatusOK), "%v", first.body)
		g.Expect(field(first.body, "pendingAction", "status")).To(Equal("completed"))
		g.Expect(field(first.body, "pendingAction", "answeredBy")).To(Equal(httpapi.DevelopmentPrincipal))
		g.Expect(field(first.body, "flowRun", "pendingAction", "kind")).To(Equal("confirmation"))
		expectProblem(g, respond(actionID, token, `"value":"detailed"`), http.StatusConflict)

		next := first.body["resumeToken"].(string)
		second := respond(field(first.body, "flowRun", "pendingAction", "id").(string), next, `"confirmed":true`)
		g.Expect(second.status).To(Equal(http.StatusOK), "%v", second.body)
		g.Expect(field(second.body, "flowRun", "state")).To(Equal("Completed"))

		result := call(t, server, http.MethodGet, "/api/work/workitems/"+itemID+"/result", "")
		g.Expect(result.status).To(Equal(http.StatusOK))
		g.Expect(result.body["result"]).To(Equal(map[string]any{"message": "Report ready",
			"output": map[string]any{"title": "Quarterly", "level": "detailed", "confirmed": true}}))

		events := call(t, server, http.MethodGet, "/api/flowRuns/"+runID+"/events", "")
		g.Expect(events.status).To(Equal(http.StatusOK))
		g.Expect(events.body["items"]).To(ContainElement(HaveKeyWithValue("type", "RunCompleted")))
		g.Expect(fmt.Sprint(events.body)).NotTo(Or(ContainSubstring("Which level"), ContainSubstring(next)))

		run := call(t, server, http.MethodGet, "/api/flowRuns/"+runID, "")
		etag := run.header.Get("ETag")
		g.Expect(etag).NotTo(BeEmpty())
		expectProblem(g, call(t, server, http.MethodDelete, "/api/flowRuns/"+runID, ""), http.StatusPreconditionRequired)
		expectProblem(g, call(t, server, http.MethodDelete, "/api/flowRuns/"+runID, "", "If-Match", `"1"`), http.StatusPreconditionFailed)
		g.Expect(call(t, server, http.MethodDelete, "/api/flowRuns/"+runID, "", "If-Match", etag).status).To(Equal(http.StatusNoContent))
		expectProblem(g, call(t, server, http.MethodGet, "/api/flowRuns/"+runID, ""), http.StatusNotFound)
	})
}

func TestFlowRunRoutesPauseResumeCancelAndProtectNonTerminalRuns(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		flow := reportFlowSetup(t, server)
		submitted := submitWork(t, server, `{"name":"`+flow+`","version":"1.0.0"}`)
		g.Expect(submitted.status).To(Equal(http.StatusAccepted), "%v", submitted.body)
		runID := field(submitted.body, "flowRun", "id").(string)
		path := "/api/flowRuns/" + runID

		run := call(t, server, http.MethodGet, path, "")
		g.Expect(run.status).To(Equal(http.StatusOK), "%v %v", run.body, submitted.body)
		del := call(t, server, http.MethodDelete, path, "", "If-Match", run.header.Get("ETag"))
		expectProblem(g, del, http.StatusConflict)
		paused := call(t, server, http.MethodPost, path+"/pause", "")
		g.Expect(paused.status).To(Equal(http.StatusOK), "%v", paused.body)
		g.Expect(paused.body["state"]).To(Equal("Paused"))
		g.Expect(field(paused.body, "pendingAction", "status")).To(Equal("created"), "a paused run's action stays answerable")
		expectProblem(g, call(t, server, http.MethodPost, path+"/pause", ""), http.StatusConflict)
		resumed := call(t, server, http.MethodPost, path+"/resume", "")
		g.Expect(resumed.body["state"]).To(Equal("ActionRequired"))
		cancelled := call(t, server, http.MethodPost, path+"/cancel", "")
		g.Expect(cancelled.body["state"]).To(Equal("Cancelled"))
		expectProblem(g, call(t, server, http.MethodPost, path+"/cancel", ""), http.StatusConflict)
		item := call(t, server, http.MethodGet, "/api/work/workitems/"+field(submitted.body, "workItem", "id").(string), "")
		g.Expect(item.body["status"]).To(Equal("Cancelled"))
	})
}

func TestARunOfAnotherWorkspaceIsNotFound(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		flow := reportFlowSetup(t, server)
		other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "other-"}}
		g.Expect(kube.Create(context.Background(), other)).To(Succeed())
		t.Cleanup(func() { _ = kube.Delete(context.Background(), other) })

		submitted := submitWork(t, server, `{"name":"`+flow+`"}`)
		runID := field(submitted.body, "flowRun", "id").(string)
		itemID := field(submitted.body, "workItem", "id").(string)
		actionID := field(submitted.body, "flowRun", "pendingAction", "id").(string)
		ws := []string{httpapi.WorkspaceHeader, other.Name}
		for _, r := range []response{
			call(t, server, http.MethodGet, "/api/flowRuns/"+runID, "", ws...),
			call(t, server, http.MethodGet, "/api/work/workitems/"+itemID, "", ws...),
			call(t, server, http.MethodGet, "/api/work/workitems/"+itemID+"/result", "", ws...),
			call(t, server, http.MethodPost, "/api/flowRuns/"+runID+"/cancel", "", ws...),
			call(t, server, http.MethodPost, "/api/flowRuns/"+runID+"/pending-actions/"+actionID+"/responses",
				`{"resumeToken":"`+submitted.body["resumeToken"].(string)+`","value":"brief"}`, ws...),
		} {
			expectProblem(g, r, http.StatusNotFound)
		}
	})
}

func TestAFlowBackedSubmissionThatCannotResolveIsRefusedBeforeAnythingIsQueued(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		r := submitWork(t, server, `{"name":"no-such-flow"}`)
		expectProblem(g, r, http.StatusUnprocessableEntity)
		g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", "body.flowReference")))
		expectProblem(g, call(t, server, http.MethodPost, "/api/work/workitems", `{"type":"x","title":"t","instruction":"i"}`), http.StatusUnprocessableEntity)

		flow := reportFlowSetup(t, server)
		expectProblem(g, submitWork(t, server, `{"name":"`+flow+`","version":"9.9.9"}`), http.StatusUnprocessableEntity)
		g.Expect(call(t, server, http.MethodPost, "/api/flows/"+flow+"/versions", `{"version":"2.0.0"}`).status).To(Equal(http.StatusCreated))

		var items, runs int
		g.Expect(s.DB().QueryRow(`SELECT COUNT(*) FROM work_items`).Scan(&items)).To(Succeed())
		g.Expect(s.DB().QueryRow(`SELECT COUNT(*) FROM flow_runs`).Scan(&runs)).To(Succeed())
		g.Expect(items + runs).To(BeZero())
	})
}

func TestWorkRoutesNeedAnAuthenticatedCaller(t *testing.T) {
	g := NewWithT(t)
	server := newServer(t, config.Production, nil)
	for _, path := range []string{"/api/work/workitems/x", "/api/flowRuns/x"} {
		expectProblem(g, call(t, server, http.MethodGet, path, ""), http.StatusUnauthorized)
	}
	r := call(t, server, http.MethodPost, "/api/work/workitems", `{"type":"x","title":"t","instruction":"i","flowReference":{"name":"f"}}`)
	expectProblem(g, r, http.StatusUnauthorized)
	g.Expect(strings.ToLower(fmt.Sprint(r.body))).To(ContainSubstring("authentication"))
}

// sseEvent is one server-sent event as a client reads it.
type sseEvent struct{ id, event, data string }

func readStream(t *testing.T, resp *http.Response) []sseEvent {
	t.Helper()
	defer resp.Body.Close()
	var (
		out []sseEvent
		cur sseEvent
	)
	scanner := bufio.NewScanner(resp.Body)
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case line == "":
			out = append(out, cur)
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	return out
}

func openStream(t *testing.T, server *httptest.Server, runID, lastEventID string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, server.URL+"/api/flowRuns/"+runID+"/stream", nil)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return resp
}

func TestTheRunStreamReplaysTheHistorySendsNewEventsAndResumesAfterLastEventID(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		flow := reportFlowSetup(t, server)
		submitted := submitWork(t, server, `{"name":"`+flow+`"}`)
		runID := field(submitted.body, "flowRun", "id").(string)
		actionID := field(submitted.body, "flowRun", "pendingAction", "id").(string)

		// Opened while the run waits: the history so far, then what the answers cause.
		live := openStream(t, server, runID, "")
		first := call(t, server, http.MethodPost, "/api/flowRuns/"+runID+"/pending-actions/"+actionID+"/responses?waitSeconds=10",
			`{"resumeToken":"`+submitted.body["resumeToken"].(string)+`","value":"brief"}`)
		g.Expect(first.status).To(Equal(http.StatusOK), "%v", first.body)
		second := call(t, server, http.MethodPost, "/api/flowRuns/"+runID+"/pending-actions/"+
			field(first.body, "flowRun", "pendingAction", "id").(string)+"/responses",
			`{"resumeToken":"`+first.body["resumeToken"].(string)+`","confirmed":false}`)
		g.Expect(second.status).To(Equal(http.StatusOK), "%v", second.body)
		events := readStream(t, live)
		g.Expect(events).NotTo(BeEmpty())
		g.Expect(events[0]).To(Equal(sseEvent{id: "1", event: "RunCreated", data: events[0].data}))
		g.Expect(events[len(events)-1].event).To(Equal("RunCompleted"), "the stream ends with the run")
		for i, e := range events {
			g.Expect(e.id).To(Equal(fmt.Sprint(i+1)), "every event once, in order")
		}

		resumed := readStream(t, openStream(t, server, runID, "5"))
		g.Expect(resumed).To(HaveLen(len(events) - 5))
		g.Expect(resumed[0].id).To(Equal("6"))

		expectProblem(g, call(t, server, http.MethodGet, "/api/flowRuns/unknown/stream", ""), http.StatusNotFound)
	})
}

// A caller holds at most Platform:Streams:MaxPerPrincipal run streams at once; beyond, 429 Problem
// Details, and a closed stream frees its place.
func TestACallerHoldsAtMostItsShareOfRunStreams(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServerOn(t, s, kube, kube, map[string]string{"Platform:Streams:MaxPerPrincipal": "2"}, nil)
		flow := reportFlowSetup(t, server)
		runID := field(submitWork(t, server, `{"name":"`+flow+`"}`).body, "flowRun", "id").(string)
		first, second := openStream(t, server, runID, ""), openStream(t, server, runID, "")
		defer second.Body.Close()
		expectProblem(g, call(t, server, http.MethodGet, "/api/flowRuns/"+runID+"/stream", ""), http.StatusTooManyRequests)
		first.Body.Close()
		g.Eventually(func() int {
			resp, err := http.Get(server.URL + "/api/flowRuns/" + runID + "/stream")
			g.Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			return resp.StatusCode
		}).Should(Equal(http.StatusOK))
	})
}

func TestMetricsCountRunsAndStepsInPrometheusFormat(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServerOn(t, s, kube, kube, map[string]string{httpapi.MetricsSetting: "true"}, nil)
		flow := reportFlowSetup(t, server)
		submitted := submitWork(t, server, `{"name":"`+flow+`"}`)
		runID := field(submitted.body, "flowRun", "id").(string)
		g.Expect(field(submitted.body, "flowRun", "state")).To(Equal("ActionRequired"))
		g.Expect(call(t, server, http.MethodPost, "/api/flowRuns/"+runID+"/cancel", "").status).To(Equal(http.StatusOK))

		resp, err := http.Get(server.URL + "/metrics")
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		data, _ := io.ReadAll(resp.Body)
		g.Expect(string(data)).To(And(
			MatchRegexp(`platform_flow_run_steps_total\{outcome="suspended",type="Agent"\} [1-9]`),
			MatchRegexp(`platform_flow_run_step_duration_seconds_count\{type="Input"\} [1-9]`),
			MatchRegexp(`platform_flow_runs_claimed_total [1-9]`),
		))
		g.Expect(string(data)).NotTo(ContainSubstring(runID), "metrics never name runs")
	})
}

func TestMetricsAreServedOnTheServicePortOnlyWhereTheOperatorSaysSo(t *testing.T) {
	cases := map[string]struct {
		settings map[string]string
		status   int
	}{
		"not by default":                       {settings: nil, status: http.StatusNotFound},
		"not when the setting says false":      {settings: map[string]string{httpapi.MetricsSetting: "false"}, status: http.StatusNotFound},
		"to anyone when the setting says true": {settings: map[string]string{httpapi.MetricsSetting: "true"}, status: http.StatusOK},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			settings := map[string]string{"Platform:Authentication:Mode": "Development"}
			maps.Copy(settings, tc.settings)
			server := newServer(t, config.Testing, settings)
			r := call(t, server, http.MethodGet, "/metrics", "")
			g.Expect(r.status).To(Equal(tc.status), "%s", r.raw)
			if tc.status == http.StatusOK {
				g.Expect(r.raw).To(ContainSubstring("# TYPE "))
			} else {
				g.Expect(r.raw).NotTo(ContainSubstring("# TYPE "), "no metric leaks")
			}
		})
	}
	t.Run("a setting that is not a boolean stops the server from starting", func(t *testing.T) {
		g := NewWithT(t)
		_, err := service.New(httpapi.Options{Config: config.FromMap(config.Testing, map[string]string{"Platform:Authentication:Mode": "Development", httpapi.MetricsSetting: "admins"}),
			Kube: kube, PlatformKube: platformKube, Ready: func(context.Context) error { return nil }})
		g.Expect(err).To(MatchError(ContainSubstring(httpapi.MetricsSetting)))
	})
}

func TestASubmissionRightAfterAFlowOrAgentChangedRunsTheChangeEvenWhenReadsComeFromInformers(t *testing.T) {
	if env.Server() == nil {
		t.Skip("against an existing cluster there is no loopback identity for informers")
	}
	g := NewWithT(t)
	informers, err := cache.New(env.Server().LoopbackConfig, cache.Options{Scheme: platformscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = informers.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })
	server := workServerOn(t, storeFor(t), kube, executor.CacheFirst{Cache: informers, Live: kube, Writes: executor.NewWrites(platformscheme.Scheme)}, nil, nil)
	submit := func(name string) response {
		return call(t, server, http.MethodPost, "/api/work/workitems?waitSeconds=10",
			`{"type":"t","title":"t","instruction":"i","flowReference":{"name":"`+name+`"}}`)
	}
	replace := func(g Gomega, path, body string) {
		current := call(t, server, http.MethodGet, path, "")
		g.Expect(current.status).To(Equal(http.StatusOK), "%v", current.body)
		r := call(t, server, http.MethodPut, path, body, "If-Match", current.header.Get("ETag"))
		g.Expect(r.status).To(Equal(http.StatusOK), "%v", r.body)
	}
	for name, tc := range map[string]struct {
		// change changes the Flow (or its agent) named name, whose active version 1.0.0 ran a moment ago.
		change func(g Gomega, name string)
		expect func(g Gomega, submitted response)
	}{
		"a version activated a moment ago is the version pinned": {
			change: func(g Gomega, name string) {
				r := call(t, server, http.MethodPost, "/api/flows/"+name+"/versions", `{"version":"2.0.0","activate":true}`)
				g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)
			},
			expect: func(g Gomega, submitted response) {
				g.Expect(submitted.status).To(Equal(http.StatusAccepted), "%v", submitted.body)
				g.Expect(field(submitted.body, "flowRun", "flow", "version")).To(Equal("2.0.0"), "%v", submitted.body)
			},
		},
		"a Flow disabled a moment ago refuses the submission": {
			change: func(g Gomega, name string) {
				replace(g, "/api/flows/"+name, strings.Replace(directFlowBody(name, name, "Off"), `"enabled":true`, `"enabled":false`, 1))
			},
			expect: func(g Gomega, submitted response) {
				g.Expect(submitted.status).To(Equal(http.StatusConflict), "%v", submitted.body)
			},
		},
		"a Flow deleted a moment ago is not found": {
			change: func(g Gomega, name string) {
				flow := call(t, server, http.MethodGet, "/api/flows/"+name, "")
				g.Expect(call(t, server, http.MethodDelete, "/api/flows/"+name, "", "If-Match", flow.header.Get("ETag")).status).To(Equal(http.StatusNoContent))
			},
			expect: func(g Gomega, submitted response) {
				g.Expect(submitted.status).To(Equal(http.StatusUnprocessableEntity), "%v", submitted.body)
			},
		},
		"an agent changed a moment ago answers with its new instructions": {
			change: func(g Gomega, name string) {
				replace(g, "/api/agents/"+name, `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"`+name+`"},"definition":{"instructions":"@respond changed"}}`)
			},
			expect: func(g Gomega, submitted response) {
				g.Expect(submitted.status).To(Equal(http.StatusAccepted), "%v", submitted.body)
				result := call(t, server, http.MethodGet, "/api/work/workitems/"+field(submitted.body, "workItem", "id").(string)+"/result", "")
				g.Expect(fmt.Sprint(result.body["result"])).To(ContainSubstring("changed"), "%v", result.body)
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			suffixes[t.Name()]++
			flow := fmt.Sprintf("fresh-%d%d", time.Now().UnixNano()%100000, suffixes[t.Name()])
			for _, c := range []struct{ path, body string }{
				{"/api/agents", `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"` + flow + `"},"definition":{"instructions":"@respond done"}}`},
				{"/api/flows", directFlowBody(flow, flow, "Fresh")},
				{"/api/flows/" + flow + "/versions", `{"version":"1.0.0","activate":true}`},
			} {
				r := call(t, server, http.MethodPost, c.path, c.body)
				g.Expect(r.status).To(Equal(http.StatusCreated), "%s: %v", c.path, r.body)
			}
			// The first submission fills the informers with the Flow, its version and its agent.
			first := submit(flow)
			g.Expect(field(first.body, "flowRun", "state")).To(Equal("Completed"), "%v", first.body)
			tc.change(g, flow)
			tc.expect(g, submit(flow))
		})
	}
}
