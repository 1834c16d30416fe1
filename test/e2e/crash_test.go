package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// crashEnv runs the server offline in Development mode with short executor leases, so a run left
// by a killed process is taken over within seconds of the restart.
var crashEnv = []string{
	"PLATFORM_ENVIRONMENT=Testing",
	"Platform__Authentication__Mode=Development",
	"AI__Provider=Deterministic",
	"Platform__Executor__LeaseSeconds=2",
}

// crashIterations is how many runs are killed at random points; E2E_CRASH_ITERATIONS raises it.
func crashIterations() int {
	if n, err := strconv.Atoi(os.Getenv("E2E_CRASH_ITERATIONS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// serviceClient calls the service API of the current server.
type serviceClient struct {
	t    *testing.T
	base string
}

func (c serviceClient) call(method, path, body string) (int, map[string]any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewBufferString(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(data) > 0 {
		if err := json.Unmarshal(data, &out); err != nil {
			c.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
		}
	}
	return resp.StatusCode, out
}

func (c serviceClient) must(status int, method, path, body string) map[string]any {
	c.t.Helper()
	got, out := c.call(method, path, body)
	if got != status {
		c.t.Fatalf("%s %s: status %d, want %d: %v", method, path, got, status, out)
	}
	return out
}

// crashServer is a `platform serve` on one data directory (and database) that the test kills
// and restarts.
type crashServer struct {
	t       *testing.T
	dataDir string
	args    []string
	// env is the server's environment; crashEnv when nil.
	env     []string
	current *server
}

func (cs *crashServer) start() serviceClient {
	cs.t.Helper()
	env := cs.env
	if env == nil {
		env = crashEnv
	}
	s, err := startServerEnv(cs.dataDir, env, cs.args...)
	if err != nil {
		cs.t.Fatal(err)
	}
	cs.current = s
	return serviceClient{t: cs.t, base: s.ServiceURL(cs.t)}
}

// sigkill kills the server at once, as a power cut or the OOM killer would.
func (cs *crashServer) sigkill() {
	cs.current.stopping.Store(true)
	cs.current.kill()
}

func (cs *crashServer) stop() {
	if cs.current == nil {
		return
	}
	if code, _, err := cs.current.stop(); err != nil || code != 0 {
		cs.t.Errorf("server did not stop cleanly (exit code %d, %v):\n%s", code, err, cs.current.output())
	}
}

// waitForState polls the run until it is in one of states.
func waitForState(c serviceClient, runID string, states ...string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, run := c.call(http.MethodGet, "/api/flowRuns/"+runID, "")
		if status == http.StatusOK {
			for _, s := range states {
				if run["state"] == s {
					return run
				}
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("run %s is not %v after 60s: %d %v", runID, states, status, run)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// setupReportFlow creates the agents and the published, active flow of the "Done when":
// Input -> Agent (requests a choice) -> Condition -> Agent (requests confirmation) -> Output.
func setupReportFlow(c serviceClient) {
	c.t.Helper()
	var status int
	// The development workspace is provisioned asynchronously after start.
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if status, _ = c.call(http.MethodGet, "/api/agents", ""); status == http.StatusOK {
			break
		}
	}
	for name, instructions := range map[string]string{
		"planner":   `Plan the report.\n@latencyMs 150\n@requestChoice Which level of detail?\n@option brief Brief\n@option detailed Detailed`,
		"confirmer": `@latencyMs 150\n@requestConfirmation Publish the report?`,
	} {
		c.must(http.StatusCreated, http.MethodPost, "/api/agents", `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"`+name+`"},`+
			`"definition":{"instructions":"`+instructions+`"}}`)
	}
	c.must(http.StatusCreated, http.MethodPost, "/api/flows", `{"name":"report","kind":"Orchestration","definition":{"steps":[`+
		`{"name":"in","type":"Input"},{"name":"choose","type":"Agent","agent":{"name":"planner"}},`+
		`{"name":"check","type":"Condition","expression":"steps.choose.answer == 'detailed'"},`+
		`{"name":"brief","type":"Transform","expression":"'brief'"},`+
		`{"name":"confirm","type":"Agent","agent":{"name":"confirmer"}},`+
		`{"name":"out","type":"Output","message":"Report ready","input":"{'title': input.title, 'level': steps.choose.answer, 'confirmed': steps.confirm.answer}"}],`+
		`"edges":[{"from":"in","to":"choose"},{"from":"choose","to":"check"},{"from":"check","to":"confirm","when":"true"},`+
		`{"from":"check","to":"brief","when":"false"},{"from":"brief","to":"confirm"},{"from":"confirm","to":"out"}]}}`)
	c.must(http.StatusCreated, http.MethodPost, "/api/flows/report/versions", `{"version":"1.0.0","activate":true}`)
}

// reportRun is one WorkItem of the report flow as a client drives it.
type reportRun struct {
	itemID, runID, token string
}

func submitReport(c serviceClient, title string) reportRun {
	c.t.Helper()
	out := c.must(http.StatusAccepted, http.MethodPost, "/api/work/workitems",
		`{"type":"report","title":"`+title+`","instruction":"Prepare the report","flowReference":{"name":"report"}}`)
	item, run := out["workItem"].(map[string]any), out["flowRun"].(map[string]any)
	return reportRun{itemID: item["id"].(string), runID: run["id"].(string), token: out["resumeToken"].(string)}
}

// answer answers the run's open pending action once the run waits on it, and keeps the token
// for the next one.
func (r *reportRun) answer(c serviceClient, kind, answer string) {
	c.t.Helper()
	run := waitForState(c, r.runID, "ActionRequired")
	action := run["pendingAction"].(map[string]any)
	if action["kind"] != kind {
		c.t.Fatalf("run %s waits on a %v action, want %s", r.runID, action["kind"], kind)
	}
	out := c.must(http.StatusOK, http.MethodPost, "/api/flowRuns/"+r.runID+"/pending-actions/"+action["id"].(string)+"/responses",
		`{"resumeToken":"`+r.token+`",`+answer+`}`)
	r.token = out["resumeToken"].(string)
}

func (r *reportRun) result(c serviceClient) map[string]any {
	c.t.Helper()
	waitForState(c, r.runID, "Completed", "Failed")
	return c.must(http.StatusOK, http.MethodGet, "/api/work/workitems/"+r.itemID+"/result", "")
}

// expectEachStepCompletedOnce checks the run's history: every step that ran completed exactly as
// often as in an uninterrupted run, however many times a crash made a worker start it. An agent
// that asks completes its step twice: once with its question, once with its answer after the
// person's. It logs the steps a crash interrupted (restarted under the same attempt), to show
// where the kills landed.
func expectEachStepCompletedOnce(g Gomega, c serviceClient, runID string) {
	events := c.must(http.StatusOK, http.MethodGet, "/api/flowRuns/"+runID+"/events", "")["items"].([]any)
	completed, started := map[string]int{}, map[string]int{}
	for _, e := range events {
		e := e.(map[string]any)
		switch e["type"] {
		case "StepCompleted":
			completed[e["step"].(string)]++
		case "StepRestarted":
			started[e["step"].(string)]++
		}
	}
	for step, n := range started {
		c.t.Logf("run %s: step %q was interrupted by a kill and restarted %d time(s)", runID, step, n)
	}
	g.ExpectWithOffset(1, completed).To(Equal(map[string]int{"in": 1, "choose": 2, "check": 1, "confirm": 2, "out": 1}), "history of run %s: %v", runID, events)
}

func TestAFlowRunSurvivesSIGKILLAndCompletesWithTheSameResultAsAnUninterruptedRun(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		cs := &crashServer{t: t, dataDir: filepath.Join(t.TempDir(), "data")}
		if opts.DatabaseURL != "" {
			cs.args = []string{"--database-url", opts.DatabaseURL}
		}
		crashAndCompare(t, cs)
	})
}

func crashAndCompare(t *testing.T, cs *crashServer) {
	g := NewWithT(t)
	c := cs.start()
	t.Cleanup(cs.stop)
	setupReportFlow(c)

	// The reference: the same work, answered the same way, with no crash.
	reference := submitReport(c, "Quarterly")
	reference.answer(c, "choice", `"value":"detailed"`)
	reference.answer(c, "confirmation", `"confirmed":true`)
	want := reference.result(c)
	g.Expect(want).To(HaveKeyWithValue("status", "Completed"))
	g.Expect(want).To(HaveKeyWithValue("result", map[string]any{"message": "Report ready",
		"output": map[string]any{"title": "Quarterly", "level": "detailed", "confirmed": true}}))
	expectEachStepCompletedOnce(g, c, reference.runID)

	t.Run("killed between the two answers", func(t *testing.T) {
		g := NewWithT(t)
		r := submitReport(c, "Quarterly")
		r.answer(c, "choice", `"value":"detailed"`)
		cs.sigkill()
		c = cs.start()
		r.answer(c, "confirmation", `"confirmed":true`)
		got := r.result(c)
		g.Expect(got["result"]).To(Equal(want["result"]))
		expectEachStepCompletedOnce(g, c, r.runID)
	})

	// Kills at random moments while the executor works: right after a submission or an answer,
	// while the worker runs steps, pins, suspends or completes.
	for i := range crashIterations() {
		t.Run(fmt.Sprintf("killed at random points, iteration %d", i), func(t *testing.T) {
			g := NewWithT(t)
			r := submitReport(c, "Quarterly")
			time.Sleep(time.Duration(rand.N(300)) * time.Millisecond)
			cs.sigkill()
			c = cs.start()
			r.answer(c, "choice", `"value":"detailed"`)
			time.Sleep(time.Duration(rand.N(300)) * time.Millisecond)
			cs.sigkill()
			c = cs.start()
			r.answer(c, "confirmation", `"confirmed":true`)
			time.Sleep(time.Duration(rand.N(100)) * time.Millisecond)
			cs.sigkill()
			c = cs.start()
			got := r.result(c)
			g.Expect(got["result"]).To(Equal(want["result"]), "run %s: %v", r.runID, got)
			expectEachStepCompletedOnce(g, c, r.runID)
		})
	}
}
