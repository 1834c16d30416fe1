package service_test

import (
	"context"
	"net/http"
	"sync"

	"platform.dev/platform/apiserver/httpapi"
)

// workplaceFixtures holds, per table fixture, the Workplace objects the rows read: the demo
// Entries published in the table's workspace, a conversation with its Task, an artifact of it;
// made on first use, as the Platform administrator.
var (
	workplaceFixturesMu sync.Mutex
	workplaceFixtures   = map[*tableFixture]*workplaceFixture{}
)

type workplaceFixture struct {
	interactionID, taskID, artifactID string
}

func (f *tableFixture) workplace() *workplaceFixture {
	f.t.Helper()
	workplaceFixturesMu.Lock()
	defer workplaceFixturesMu.Unlock()
	if w, ok := workplaceFixtures[f]; ok {
		return w
	}
	publishDemo(f.t, f.ws.RouteName)
	opened := f.open("prepare-report")
	w := &workplaceFixture{interactionID: field(opened, "interaction", "id").(string), taskID: field(opened, "task", "id").(string)}
	a, err := f.identityEnv.workplace.StoreArtifact(context.Background(), w.taskID, f.ws.ID, "notes.txt", "text/plain", []byte("table notes"))
	if err != nil {
		f.t.Fatal(err)
	}
	w.artifactID = a.ID
	workplaceFixtures[f] = w
	return w
}

// open opens a conversation from a demo Entry as the administrator and returns the exchange.
func (f *tableFixture) open(entry string) map[string]any {
	f.t.Helper()
	r := f.as(platformAdmin, http.MethodPost, "/api/workspaces/"+f.ws.ID+"/entries/"+entry+"/interactions?waitSeconds=10", `{"input":{"request":"Table"}}`)
	if r.status != http.StatusCreated {
		f.t.Fatalf("open %s: %d %v", entry, r.status, r.body)
	}
	return r.body
}

// ownTask is a fresh prepare-report Task waiting on its first question.
func (f *tableFixture) ownTask() (taskID string, exchange map[string]any) {
	f.workplace()
	exchange = f.open("prepare-report")
	return field(exchange, "task", "id").(string), exchange
}

// workplaceRows: runs/read for every role of the workspace, runs/execute for Member and up,
// runs/delete for Owner and Admin; another workspace's is not found.
func workplaceRows(rows map[string]tableRow) {
	in := func(f *tableFixture, path string) string { return "/api/workspaces/" + f.ws.ID + path }
	read := func(path func(*tableFixture, *workplaceFixture) string) tableRow {
		return tableRow{httpapi.PolicyRunsRead, workspaceRoles(200), func(f *tableFixture, _ role) tableRequest {
			return tableRequest{method: http.MethodGet, path: in(f, path(f, f.workplace()))}
		}}
	}
	rows["list-interactions"] = read(func(*tableFixture, *workplaceFixture) string { return "/interactions" })
	rows["get-interaction"] = read(func(_ *tableFixture, w *workplaceFixture) string { return "/interactions/" + w.interactionID })
	rows["list-interaction-messages"] = read(func(_ *tableFixture, w *workplaceFixture) string {
		return "/interactions/" + w.interactionID + "/messages"
	})
	rows["list-tasks"] = read(func(*tableFixture, *workplaceFixture) string { return "/tasks" })
	rows["get-task"] = read(func(_ *tableFixture, w *workplaceFixture) string { return "/tasks/" + w.taskID })
	rows["list-task-activities"] = read(func(_ *tableFixture, w *workplaceFixture) string { return "/tasks/" + w.taskID + "/activities" })
	rows["list-task-results"] = read(func(_ *tableFixture, w *workplaceFixture) string { return "/tasks/" + w.taskID + "/results" })
	rows["list-task-artifacts"] = read(func(_ *tableFixture, w *workplaceFixture) string { return "/tasks/" + w.taskID + "/artifacts" })
	rows["download-task-artifact"] = read(func(_ *tableFixture, w *workplaceFixture) string {
		return "/tasks/" + w.taskID + "/artifacts/" + w.artifactID + "/content"
	})
	rows["list-flow-runs"] = tableRow{httpapi.PolicyRunsRead, workspaceRoles(200), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodGet, path: "/api/flowRuns?state=Completed,Failed,Cancelled"}
	}}
	rows["list-notifications"] = read(func(*tableFixture, *workplaceFixture) string { return "/notifications" })
	rows["list-pending-actions"] = read(func(*tableFixture, *workplaceFixture) string { return "/pending-actions?state=open" })
	rows["read-all-notifications"] = tableRow{httpapi.PolicyRunsRead, workspaceRoles(200), func(f *tableFixture, _ role) tableRequest {
		f.workplace()
		return tableRequest{method: http.MethodPost, path: in(f, "/notifications/read-all")}
	}}
	// Each caller reads a notification of its own: the administrator's questions notify the
	// administrator only, so the others read a notification about nothing of theirs: 404.
	rows["read-notification"] = tableRow{httpapi.PolicyRunsRead, statuses{401, 404, 404, 404, 404, 404, 200}, func(f *tableFixture, _ role) tableRequest {
		f.workplace()
		list := f.as(platformAdmin, http.MethodGet, in(f, "/notifications"), "")
		id := field(list.body, "items").([]any)[0].(map[string]any)["id"].(string)
		return tableRequest{method: http.MethodPost, path: in(f, "/notifications/"+id+"/read")}
	}}

	rows["open-interaction"] = tableRow{httpapi.PolicyRunsExecute, runsExecute(201), func(f *tableFixture, _ role) tableRequest {
		f.workplace()
		return tableRequest{method: http.MethodPost, path: in(f, "/entries/quick-answer/interactions"), body: `{"input":{"question":"Table?"}}`}
	}}
	rows["send-interaction-message"] = tableRow{httpapi.PolicyRunsExecute, runsExecute(202), func(f *tableFixture, _ role) tableRequest {
		f.workplace()
		idle := f.as(platformAdmin, http.MethodPost, in(f, "/entries/quick-answer/interactions?waitSeconds=10"), `{"input":{"question":"Table?"}}`)
		return tableRequest{method: http.MethodPost, path: in(f, "/interactions/"+field(idle.body, "interaction", "id").(string)+"/messages"), body: `{"text":"And then?"}`}
	}}
	rows["answer-interaction-pending-action"] = tableRow{httpapi.PolicyRunsExecute, runsExecute(200), func(f *tableFixture, _ role) tableRequest {
		_, exchange := f.ownTask()
		return tableRequest{method: http.MethodPost,
			path: in(f, "/interactions/"+field(exchange, "interaction", "id").(string)+"/pending-actions/"+field(exchange, "action", "pendingAction", "id").(string)+"/responses"),
			body: `{"resumeToken":"` + exchange["resumeToken"].(string) + `","value":"table"}`}
	}}
	rows["reissue-interaction-resume-token"] = tableRow{httpapi.PolicyRunsExecute, runsExecute(200), func(f *tableFixture, _ role) tableRequest {
		_, exchange := f.ownTask()
		return tableRequest{method: http.MethodPost,
			path: in(f, "/interactions/"+field(exchange, "interaction", "id").(string)+"/pending-actions/"+field(exchange, "action", "pendingAction", "id").(string)+"/resume-token")}
	}}
	rows["pause-task"] = tableRow{httpapi.PolicyRunsExecute, runsExecute(200), func(f *tableFixture, _ role) tableRequest {
		id, _ := f.ownTask()
		return tableRequest{method: http.MethodPost, path: in(f, "/tasks/"+id+"/pause")}
	}}
	rows["resume-task"] = tableRow{httpapi.PolicyRunsExecute, runsExecute(200), func(f *tableFixture, _ role) tableRequest {
		id, _ := f.ownTask()
		if r := f.as(platformAdmin, http.MethodPost, in(f, "/tasks/"+id+"/pause"), ""); r.status != http.StatusOK {
			f.t.Fatalf("pause: %d %v", r.status, r.body)
		}
		return tableRequest{method: http.MethodPost, path: in(f, "/tasks/"+id+"/resume")}
	}}
	rows["cancel-task"] = tableRow{httpapi.PolicyRunsExecute, runsExecute(200), func(f *tableFixture, _ role) tableRequest {
		id, _ := f.ownTask()
		return tableRequest{method: http.MethodPost, path: in(f, "/tasks/"+id+"/cancel")}
	}}
	rows["delete-task"] = tableRow{httpapi.PolicyRunsDelete, ownersAndAdmins(204), func(f *tableFixture, _ role) tableRequest {
		id, _ := f.ownTask()
		cancelled := f.as(platformAdmin, http.MethodPost, in(f, "/tasks/"+id+"/cancel"), "")
		if cancelled.status != http.StatusOK {
			f.t.Fatalf("cancel: %d %v", cancelled.status, cancelled.body)
		}
		return tableRequest{method: http.MethodDelete, path: in(f, "/tasks/"+id), headers: []string{"If-Match", cancelled.header.Get("ETag")}}
	}}
	rows["answer-task-pending-action"] = tableRow{httpapi.PolicyRunsExecute, runsExecute(200), func(f *tableFixture, _ role) tableRequest {
		f.workplace()
		// An autonomous Task: a WorkItem of the Work API on the demo flow, asking its first question.
		s := f.submitReference(`{"name":"prepare-report-builtin"}`)
		return tableRequest{method: http.MethodPost, path: in(f, "/tasks/"+s.itemID+"/pending-actions/"+s.actionID+"/responses"), body: `{"value":"table"}`}
	}}
}
