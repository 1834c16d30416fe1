package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/workplace"
)

// workTasksPath is the kube API path of the default workspace's Tasks.
const workTasksPath = "/apis/work.platform.dev/v1/namespaces/default/tasks"

// openReport opens a conversation of the report Entry (setupReportFlow) in the default workspace
// and returns its Task's id, its conversation's path and the question it asks.
func openReport(c serviceClient, title string) (task, interaction, action, token string) {
	c.t.Helper()
	opened := c.must(http.StatusCreated, http.MethodPost, "/api/workspaces/default/entries/report/interactions?waitSeconds=10",
		`{"input":{"title":"`+title+`"}}`)
	i := opened["interaction"].(map[string]any)
	pa := opened["action"].(map[string]any)["pendingAction"].(map[string]any)
	return i["taskId"].(string), "/api/workspaces/default/interactions/" + i["id"].(string), pa["id"].(string), opened["resumeToken"].(string)
}

// TestKubectlFollowsAWorkTaskFromItsQuestionToCompletedAndResumesItsWatchAfterARestart: a Task of
// the Workplace is a kube object: kubectl lists it with what it waits on, selects it by state,
// pages through Tasks, waits for it to complete and watches it go running -> completed; a watch
// resumes from a recent resourceVersion after the server restarted, and answers 410 once the
// outbox no longer holds what followed it.
func TestKubectlFollowsAWorkTaskFromItsQuestionToCompletedAndResumesItsWatchAfterARestart(t *testing.T) {
	requireKubectl(t)
	g := NewWithT(t)
	cs := &crashServer{t: t, dataDir: filepath.Join(t.TempDir(), "data")}
	c := cs.start()
	t.Cleanup(cs.stop)
	setupReportFlow(c)
	c.must(http.StatusCreated, http.MethodPost, "/api/entries", `{"apiVersion":"platform/v1","kind":"Entry","metadata":{"name":"report"},`+
		`"definition":{"fields":[{"name":"title","role":"PrimaryInput"}],"binding":{"flow":{"name":"report"}}}}`)
	c.must(http.StatusOK, http.MethodPost, "/api/entries/report/publish", "")
	kubectl := func(args ...string) string {
		t.Helper()
		return cs.current.mustKubectl(t, append([]string{"-n", "default"}, args...)...)
	}
	// A watch that its timeout ends makes `kubectl get --raw` fail with a stream error after the
	// events (as for every kind); what counts is what it printed.
	rawWatch := func(rv string) string {
		r := cs.current.kubectl("-n", "default", "get", "--raw", workTasksPath+"?watch=1&timeoutSeconds=3&resourceVersion="+rv)
		return r.Stdout + r.Stderr
	}

	// A watch of every Task, as `kubectl get tasks -w` shows it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watchOut := &syncBuffer{}
	watcher := exec.CommandContext(ctx, kubectlBinary, "get", "tasks", "-n", "default", "-w", "--output-watch-events")
	watcher.Env = append(os.Environ(), "KUBECONFIG="+cs.current.Kubeconfig(), "KUBECACHEDIR="+kubeCacheDir)
	watcher.Stdout, watcher.Stderr = watchOut, watchOut
	g.Expect(watcher.Start()).To(Succeed())
	defer func() { cancel(); _ = watcher.Wait() }()
	// And of every FlowRun: each transition of a run is in the outbox too.
	runsOut := &syncBuffer{}
	runsWatcher := exec.CommandContext(ctx, kubectlBinary, "get", "flowruns", "-n", "default", "-w", "--output-watch-events")
	runsWatcher.Env = watcher.Env
	runsWatcher.Stdout, runsWatcher.Stderr = runsOut, runsOut
	g.Expect(runsWatcher.Start()).To(Succeed())
	defer func() { cancel(); _ = runsWatcher.Wait() }()

	task, interaction, action, token := openReport(c, "Quarterly")
	kubectl("wait", "--for=jsonpath={.status.state}=action-required", "task/"+task, "--timeout=60s")
	g.Expect(kubectl("get", "tasks")).To(MatchRegexp(`(?m)^NAME\s+TITLE\s+STATE\s+WAITING-ON\s+TOKENS\s+AGE\n` + task +
		`\s+report: Quarterly\s+action-required\s+Which level of detail\?`))
	g.Expect(kubectl("get", "tasks", "--field-selector", "status.state=action-required,status.entry=report", "-o", "name")).
		To(Equal("task.work.platform.dev/" + task + "\n"))
	g.Expect(kubectl("get", "tasks", "--field-selector", "status.state=completed", "-o", "name")).To(BeEmpty())
	g.Expect(kubectl("get", "tasks", "-l", "work.platform.dev/state=action-required", "-o", "name")).To(ContainSubstring(task))
	g.Expect(kubectl("get", "interactions", "-o", "jsonpath={.items[0].status.messages[*].text}")).To(Equal("Quarterly Which level of detail?"))
	// kubectl prints a list of its own, without the server's resourceVersion: read the list raw.
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	g.Expect(json.Unmarshal([]byte(kubectl("get", "--raw", workTasksPath)), &list)).To(Succeed())
	listRV := list.Metadata.ResourceVersion
	g.Expect(listRV).NotTo(BeEmpty())

	answered := c.must(http.StatusOK, http.MethodPost, interaction+"/pending-actions/"+action+"/responses?waitSeconds=10",
		`{"resumeToken":"`+token+`","value":"detailed"}`)
	confirm := answered["action"].(map[string]any)["pendingAction"].(map[string]any)["id"].(string)
	c.must(http.StatusOK, http.MethodPost, interaction+"/pending-actions/"+confirm+"/responses",
		`{"resumeToken":"`+answered["resumeToken"].(string)+`","confirmed":true}`)
	kubectl("wait", "--for=jsonpath={.status.state}=completed", "task/"+task, "--timeout=60s")
	g.Eventually(watchOut.String).WithTimeout(10*time.Second).Should(MatchRegexp(
		`(?s)ADDED\s+`+task+`\s+report: Quarterly\s+action-required.*MODIFIED\s+`+task+`\s+report: Quarterly\s+running.*`+
			`MODIFIED\s+`+task+`\s+report: Quarterly\s+completed`),
		"the watch shows the Task go running -> completed")
	// The run is first committed with the conversation: Pending, or already Running when a
	// worker of the process took it and committed it with its first steps.
	g.Eventually(runsOut.String).WithTimeout(10*time.Second).Should(MatchRegexp(
		`(?s)ADDED\s+\S+\s+report\s+1.0.0\s+(Pending|Running).*MODIFIED\s+\S+\s+report\s+1.0.0\s+ActionRequired.*MODIFIED\s+\S+\s+report\s+1.0.0\s+Running.*MODIFIED\s+\S+\s+report\s+1.0.0\s+Completed`),
		"the watch of FlowRuns shows the run's transitions")
	// Across namespaces: the administrator's kubeconfig reads every workspace's Work.
	g.Expect(cs.current.mustKubectl(t, "get", "tasks", "-A")).To(MatchRegexp(`(?m)^NAMESPACE\s+NAME\s+TITLE\s+STATE.*\ndefault\s+` + task + `\s+report: Quarterly\s+completed`))

	// Pages: kubectl follows the continue tokens of a list with a limit.
	for _, title := range []string{"B", "C", "D", "E"} {
		openReport(c, title)
	}
	names := strings.Fields(kubectl("get", "tasks", "--chunk-size=2", "-o", "name"))
	g.Expect(names).To(HaveLen(5))
	g.Expect(names).To(ContainElement("task.work.platform.dev/" + task))
	g.Expect(kubectl("get", "--raw", workTasksPath+"?limit=2")).To(MatchRegexp(`"continue":"[^"]+"`))

	// After a restart, a watch from the resourceVersion read before the work resumes from there.
	cancel()
	_ = watcher.Wait()
	cs.stop()
	c = cs.start()
	resumed := rawWatch(listRV)
	g.Expect(resumed).To(MatchRegexp(`"type":"MODIFIED","object":\{"kind":"Task".*"name":"` + regexp.QuoteMeta(task) + `".*"state":"completed"`))
	g.Expect(resumed).NotTo(ContainSubstring("initial-events-end"), "a resumed watch sends changes, not the current list")

	// Once the outbox is pruned past it, the same resourceVersion is gone: the client lists again.
	cs.stop()
	db, err := store.Open(context.Background(), store.Options{DataDir: cs.dataDir})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = workplace.NewStore(db, nil, nil).PruneEvents(context.Background(), time.Now().Add(time.Minute))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(db.Close()).To(Succeed())
	cs.start()
	g.Expect(rawWatch(listRV)).To(ContainSubstring("too old resource version"))
	g.Expect(kubectl("get", "task", task, "-o", "jsonpath={.status.state}")).To(Equal("completed"))
}

// workToken signs username in and creates a PAT for workspace with permissions; it returns a
// kubeconfig that presents it.
func workToken(t *testing.T, s *server, base, username, workspace string, permissions ...string) string {
	t.Helper()
	user := &api{t: t, base: base}
	user.must(http.StatusOK, http.MethodPost, "/api/auth/local/login", "", map[string]any{"username": username, "password": e2ePassword})
	out := user.must(http.StatusCreated, http.MethodPost, "/api/identity/pat", "", map[string]any{
		"name": "work-" + workspace, "workspace": workspace, "expiresInDays": 7, "permissions": permissions})
	return tokenKubeconfig(t, s, username+"-"+workspace, out["token"].(string))
}

// TestTheWorkPlaneInKubectlAppliesWorkspaceRolesAndTokens: a PAT reads its workspace's Tasks
// (runs/read); another workspace's Task is not found and another workspace's namespace forbidden;
// a Viewer cannot delete a Task; an active Task is protected; a Task cancelled through its cancel
// subresource can be deleted; nothing else is writable.
func TestTheWorkPlaneInKubectlAppliesWorkspaceRolesAndTokens(t *testing.T) {
	requireKubectl(t)
	g := NewWithT(t)
	s, err := startServerEnv(t.TempDir(), []string{"AI__Provider=Deterministic"})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _, _, _ = s.stop() })
	base := s.ServiceURL(t)
	admin := bootstrapAlphaAndBeta(t, base)
	admin.must(http.StatusCreated, http.MethodPost, "/api/identity/accounts/", "", map[string]any{
		"username": "viewer", "password": e2ePassword, "workspace": "alpha", "role": "Viewer"})
	admin.must(http.StatusCreated, http.MethodPost, "/api/agents", "alpha", map[string]any{"apiVersion": "platform/v1", "kind": "Agent",
		"metadata": map[string]any{"name": "confirmer"}, "definition": map[string]any{"instructions": "@requestConfirmation Publish the report?"}})
	admin.must(http.StatusCreated, http.MethodPost, "/api/flows", "alpha", map[string]any{"name": "confirm", "kind": "Direct",
		"definition": map[string]any{"flowKind": "Direct", "target": map[string]any{"kind": "Agent", "id": "confirmer"}}})
	admin.must(http.StatusCreated, http.MethodPost, "/api/flows/confirm/versions", "alpha", map[string]any{"version": "1.0.0", "activate": true})
	admin.must(http.StatusCreated, http.MethodPost, "/api/entries", "alpha", map[string]any{"apiVersion": "platform/v1", "kind": "Entry",
		"metadata": map[string]any{"name": "confirm"}, "definition": map[string]any{
			"fields": []any{map[string]any{"name": "title", "role": "PrimaryInput"}}, "binding": map[string]any{"flow": map[string]any{"name": "confirm"}}}})
	admin.must(http.StatusOK, http.MethodPost, "/api/entries/confirm/publish", "alpha", nil)
	opened := admin.must(http.StatusCreated, http.MethodPost, "/api/workspaces/alpha/entries/confirm/interactions?waitSeconds=10", "alpha",
		map[string]any{"input": map[string]any{"title": "Q4"}})
	task := opened["interaction"].(map[string]any)["taskId"].(string)

	viewer := workToken(t, s, base, "viewer", "alpha", "runs/read", "runs/delete")
	otherWorkspace := workToken(t, s, base, "admin", "beta", "runs/read", "runs/delete")
	owner := workToken(t, s, base, "admin", "alpha", "runs/read", "runs/execute", "runs/delete")
	expect := func(kubeconfig string, wantOK bool, wantText string, args ...string) {
		t.Helper()
		expectKubectl(t, kubeconfig, wantOK, wantText, args...)
	}

	expect(viewer, true, task, "get", "tasks", "-n", "alpha")
	expect(viewer, true, "alpha", "get", "tasks", "-A")
	expect(otherWorkspace, true, "No resources found", "get", "tasks", "-A") // beta's token: alpha's Task is never shown
	expect(viewer, false, "forbidden", "delete", "task", task, "-n", "alpha")
	expect(otherWorkspace, false, "NotFound", "get", "task", task, "-n", "beta")
	expect(otherWorkspace, false, "forbidden", "get", "tasks", "-n", "alpha")
	expect(owner, false, "protected", "delete", "task", task, "-n", "alpha")
	expect(owner, false, "MethodNotAllowed", "label", "task", task, "-n", "alpha", "a=b")

	body := filepath.Join(t.TempDir(), "cancel.json")
	g.Expect(os.WriteFile(body, []byte(`{"apiVersion":"work.platform.dev/v1","kind":"Task","metadata":{"name":"`+task+`"}}`), 0o600)).To(Succeed())
	expect(owner, true, `"state":"cancelled"`, "create", "--raw", "/apis/work.platform.dev/v1/namespaces/alpha/tasks/"+task+"/cancel", "-f", body)
	expect(owner, true, "deleted", "delete", "task", task, "-n", "alpha")
	expect(owner, false, "NotFound", "get", "task", task, "-n", "alpha")
}
