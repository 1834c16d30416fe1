package service_test

import (
	"context"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
)

// What each role gets from the Work and Runtime routes: runs/read for every role of the
// workspace, runs/execute for Member and up, runs/delete for Owner and Admin.
func runsExecute(ok int) statuses { return statuses{401, ok, ok, ok, 403, 404, ok} }

// workFixtures holds, per table fixture, the Work objects the rows read; made on first use, as
// the Platform administrator.
var (
	workFixturesMu sync.Mutex
	workFixtures   = map[*tableFixture]*workFixture{}
)

type workFixture struct {
	// itemID and runID are of a completed run of table-flow; runtimeID of a completed Runtime Run.
	itemID, runID, runtimeID string
	agentUID                 string
}

// submission is a WorkItem submitted by the administrator and the state its run reached.
type submission struct {
	itemID, runID, actionID, token string
	body                           map[string]any
}

func (f *tableFixture) submit(flow string) submission {
	f.t.Helper()
	return f.submitReference(`{"name":"` + flow + `","version":"1.0.0"}`)
}

// submitReference submits a WorkItem on the Flow reference given as JSON (exact or active).
func (f *tableFixture) submitReference(reference string) submission {
	f.t.Helper()
	r := f.as(platformAdmin, http.MethodPost, "/api/work/workitems?waitSeconds=10",
		`{"type":"table","title":"Table","instruction":"Route it","flowReference":`+reference+`}`)
	if r.status != http.StatusAccepted {
		f.t.Fatalf("submit %s: %d %v", reference, r.status, r.body)
	}
	s := submission{itemID: field(r.body, "workItem", "id").(string), runID: field(r.body, "flowRun", "id").(string),
		token: r.body["resumeToken"].(string), body: r.body}
	if id, ok := field(r.body, "flowRun", "pendingAction", "id").(string); ok {
		s.actionID = id
	}
	return s
}

// asking is a run suspended on a choice.
func (f *tableFixture) asking() submission {
	f.t.Helper()
	f.work()
	s := f.submit("table-ask")
	if s.actionID == "" {
		f.t.Fatalf("the run of table-ask does not wait on a pending action: %v", s.body)
	}
	return s
}

func (f *tableFixture) work() *workFixture {
	f.t.Helper()
	workFixturesMu.Lock()
	defer workFixturesMu.Unlock()
	if w, ok := workFixtures[f]; ok {
		return w
	}
	for _, c := range []struct{ path, body string }{
		{"/api/agents", `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"table-asker"},` +
			`"definition":{"instructions":"@requestChoice Pick\n@option a A"}}`},
		{"/api/flows", directFlowBody("table-ask", "table-asker", "Table")},
		{"/api/flows/table-ask/versions", `{"version":"1.0.0"}`},
	} {
		if r := f.as(platformAdmin, http.MethodPost, c.path, c.body); r.status != http.StatusCreated {
			f.t.Fatalf("fixture %s: %d %v", c.path, r.status, r.body)
		}
	}
	done := f.submit("table-flow")
	if state := field(done.body, "flowRun", "state"); state != "Completed" {
		f.t.Fatalf("the run of table-flow is %v: %v", state, done.body)
	}
	w := &workFixture{itemID: done.itemID, runID: done.runID}
	w.agentUID = field(f.as(platformAdmin, http.MethodGet, "/api/agents/table-agent", "").body, "metadata", "uid").(string)
	w.runtimeID = f.settledRuntimeRun(w.agentUID)
	workFixtures[f] = w
	return w
}

// settledRuntimeRun creates a Runtime Run of the agent and waits until it is Completed.
func (f *tableFixture) settledRuntimeRun(agentUID string) string {
	f.t.Helper()
	r := f.as(platformAdmin, http.MethodPost, "/api/runtime/runs", runtimeRunBody(agentUID, ""))
	if r.status != http.StatusAccepted {
		f.t.Fatalf("runtime run: %d %v", r.status, r.body)
	}
	id := r.body["id"].(string)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if f.as(platformAdmin, http.MethodGet, "/api/runtime/runs/"+id, "").body["status"] == "Completed" {
			return id
		}
	}
	f.t.Fatalf("runtime run %s did not complete", id)
	return ""
}

func workRows(rows map[string]tableRow) {
	read := func(path func(w *workFixture) string) tableRow {
		return tableRow{httpapi.PolicyRunsRead, workspaceRoles(200), func(f *tableFixture, _ role) tableRequest {
			return tableRequest{method: http.MethodGet, path: path(f.work())}
		}}
	}
	rows["get-work-item"] = read(func(w *workFixture) string { return "/api/work/workitems/" + w.itemID })
	rows["get-work-item-result"] = read(func(w *workFixture) string { return "/api/work/workitems/" + w.itemID + "/result" })
	rows["get-flow-run"] = read(func(w *workFixture) string { return "/api/flowRuns/" + w.runID })
	rows["list-flow-run-events"] = read(func(w *workFixture) string { return "/api/flowRuns/" + w.runID + "/events" })
	rows["stream-flow-run-events"] = read(func(w *workFixture) string { return "/api/flowRuns/" + w.runID + "/stream" })
	rows["get-runtime-run"] = read(func(w *workFixture) string { return "/api/runtime/runs/" + w.runtimeID })

	rows["submit-work-item"] = tableRow{httpapi.PolicyRunsExecute, runsExecute(202), func(f *tableFixture, _ role) tableRequest {
		f.work()
		return tableRequest{method: http.MethodPost, path: "/api/work/workitems",
			body: `{"type":"table","title":"Table","instruction":"Route it","flowReference":{"name":"table-flow","version":"1.0.0"}}`}
	}}
	rows["create-runtime-run"] = tableRow{httpapi.PolicyRunsExecute, runsExecute(202), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/runtime/runs", body: runtimeRunBody(f.work().agentUID, "")}
	}}
	rows["respond-to-pending-action"] = tableRow{httpapi.PolicyRunsExecute, runsExecute(200), func(f *tableFixture, _ role) tableRequest {
		s := f.asking()
		return tableRequest{method: http.MethodPost, path: "/api/flowRuns/" + s.runID + "/pending-actions/" + s.actionID + "/responses",
			body: `{"resumeToken":"` + s.token + `","value":"a"}`}
	}}
	rows["pause-flow-run"] = tableRow{httpapi.PolicyRunsExecute, runsExecute(200), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/flowRuns/" + f.asking().runID + "/pause"}
	}}
	rows["cancel-flow-run"] = tableRow{httpapi.PolicyRunsExecute, runsExecute(200), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/flowRuns/" + f.asking().runID + "/cancel"}
	}}
	rows["resume-flow-run"] = tableRow{httpapi.PolicyRunsExecute, runsExecute(200), func(f *tableFixture, _ role) tableRequest {
		path := "/api/flowRuns/" + f.asking().runID
		if r := f.as(platformAdmin, http.MethodPost, path+"/pause", ""); r.status != http.StatusOK {
			f.t.Fatalf("pause: %d %v", r.status, r.body)
		}
		return tableRequest{method: http.MethodPost, path: path + "/resume"}
	}}
	rows["delete-flow-run"] = tableRow{httpapi.PolicyRunsDelete, ownersAndAdmins(204), func(f *tableFixture, _ role) tableRequest {
		path := "/api/flowRuns/" + f.asking().runID
		r := f.as(platformAdmin, http.MethodPost, path+"/cancel", "")
		if r.status != http.StatusOK {
			f.t.Fatalf("cancel: %d %v", r.status, r.body)
		}
		return tableRequest{method: http.MethodDelete, path: path, headers: []string{"If-Match", r.header.Get("ETag")}}
	}}
	rows["invoke-routing"] = tableRow{httpapi.PolicyRunsExecute, runsExecute(202), func(f *tableFixture, _ role) tableRequest {
		// table-agent is made the one ready agent of the workspace (no reconciler runs here), at
		// its current generation, which other rows change.
		agent := &platformv1.Agent{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: f.ws.RouteName, Name: "table-agent"}, agent); err != nil {
			f.t.Fatal(err)
		}
		setAgentReady(f.t, agent, metav1.ConditionTrue, agent.Generation)
		return tableRequest{method: http.MethodPost, path: "/api/routing/invoke", body: `{"input":"Route it"}`}
	}}
	rows["delete-runtime-run"] = tableRow{httpapi.PolicyRunsDelete, ownersAndAdmins(204), func(f *tableFixture, _ role) tableRequest {
		path := "/api/runtime/runs/" + f.settledRuntimeRun(f.work().agentUID)
		return tableRequest{method: http.MethodDelete, path: path, headers: []string{"If-Match", f.as(platformAdmin, http.MethodGet, path, "").header.Get("ETag")}}
	}}
}
