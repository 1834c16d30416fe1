package e2e

import (
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// triggerEnv runs the server offline in Local mode (so that kubectl applies Triggers with a
// Principal's token), with a short leader election Lease so that the controllers of a restarted
// process take over within seconds of a SIGKILL.
var (
	triggerEnv  = []string{"PLATFORM_ENVIRONMENT=Testing", "AI__Provider=Deterministic"}
	triggerArgs = []string{"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms"}
)

const everySecond = `apiVersion: platform.dev/v1
kind: Trigger
metadata:
  name: every-second
  namespace: alpha
definition:
  displayName: Every second
  source:
    kind: schedule
    schedule: {type: interval, expression: "00:00:01", timeZone: Europe/Paris}
  target:
    kind: flow
    flow: {name: echo}
    input: {request: tick}
  misfirePolicy: fireAll
  catchUpWindow: "00:10:00"
  catchUpLimit: 1000
  concurrencyPolicy: allow
`

// TestAnIntervalTriggerAppliedWithKubectlSubmitsEachInstantOnceAcrossASIGKILL: a Trigger firing
// every second, applied with kubectl and a Principal's token, submits one autonomous Task per
// instant; its history lists them; `kubectl get triggers` shows its next and last instants; a
// server killed with SIGKILL and started again neither loses nor duplicates an instant (fireAll
// catches up the instants of the downtime).
func TestAnIntervalTriggerAppliedWithKubectlSubmitsEachInstantOnceAcrossASIGKILL(t *testing.T) {
	requireKubectl(t)
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		args := triggerArgs
		if opts.DatabaseURL != "" {
			args = append(append([]string{}, args...), "--database-url", opts.DatabaseURL)
		}
		dataDir := filepath.Join(t.TempDir(), "data")
		start := func() (*server, *api) {
			s, err := startServerEnv(dataDir, triggerEnv, args...)
			if err != nil {
				t.Fatal(err)
			}
			return s, &api{t: t, base: s.ServiceURL(t)}
		}
		s, admin := start()
		t.Cleanup(func() {
			if code, _, err := s.stop(); err != nil || code != 0 {
				t.Errorf("server did not stop cleanly (exit code %d, %v):\n%s", code, err, s.output())
			}
		})
		admin.must(http.StatusCreated, http.MethodPost, "/api/auth/bootstrap", "", map[string]any{
			"username": "admin", "password": e2ePassword, "displayName": "Admin", "tenantName": "Acme", "workspaceName": "alpha"})
		admin.must(http.StatusCreated, http.MethodPost, "/api/agents", "alpha", map[string]any{
			"apiVersion": "platform/v1", "kind": "Agent", "metadata": map[string]any{"name": "echo-agent"},
			"definition": map[string]any{"instructions": "Echo the request"}})
		admin.must(http.StatusCreated, http.MethodPost, "/api/flows", "alpha", map[string]any{
			"name": "echo", "kind": "Direct", "definition": map[string]any{"flowKind": "Direct", "target": map[string]any{"kind": "Agent", "id": "echo-agent"}}})
		admin.must(http.StatusCreated, http.MethodPost, "/api/flows/echo/versions", "alpha", map[string]any{"version": "1.0.0", "activate": true})
		token := admin.must(http.StatusCreated, http.MethodPost, "/api/identity/pat", "", map[string]any{
			"name": "kubectl", "workspace": "alpha", "permissions": []string{"workspaces/read", "resources/read", "resources/write", "runs/read", "runs/execute"},
			"expiresInDays": 7})["token"].(string)

		r := kubectlWith(tokenKubeconfig(t, s, "admin-token", token), everySecond, "apply", "-f", "-")
		g.Expect(r.ExitCode).To(BeZero(), "%s", r)
		g.Expect(r.Stdout).To(ContainSubstring("trigger.platform.dev/every-second created"))
		history := func(a *api) []map[string]any {
			out := a.must(http.StatusOK, http.MethodGet, "/api/triggers/every-second/occurrences?limit=1000", "alpha", nil)
			items, _ := out["items"].([]any)
			list := make([]map[string]any, 0, len(items))
			for _, i := range items {
				list = append(list, i.(map[string]any))
			}
			return list
		}
		g.Eventually(func() []map[string]any { return history(admin) }).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).
			Should(HaveLen(3), "the first instants fire one second apart")

		// kubectl shows when it fires next and when it fired last.
		g.Eventually(func(g Gomega) {
			out := s.mustKubectl(t, "get", "triggers", "-n", "alpha")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			g.Expect(lines).To(HaveLen(2))
			header, row := strings.Fields(lines[0]), strings.Fields(lines[1])
			g.Expect(header).To(ContainElements("NEXT", "LAST"))
			g.Expect(row).To(HaveLen(len(header)))
			next, last := row[indexOf(header, "NEXT")], row[indexOf(header, "LAST")]
			g.Expect(next).To(MatchRegexp(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$`), out)
			g.Expect(last).To(MatchRegexp(`^\d+s$`), out)
		}).WithTimeout(20 * time.Second).Should(Succeed())

		// A power cut, then a restart on the same data.
		s.stopping.Store(true)
		s.kill()
		killedAt := time.Now()
		time.Sleep(2 * time.Second)
		s, admin = start()
		admin.must(http.StatusOK, http.MethodPost, "/api/auth/local/login", "", map[string]any{"username": "admin", "password": e2ePassword})
		g.Eventually(func(g Gomega) {
			latest := history(admin)
			g.Expect(latest).NotTo(BeEmpty())
			at, err := time.Parse(time.RFC3339, latest[0]["scheduledTime"].(string))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(at).To(BeTemporally(">", time.Now().Add(-2*time.Second)), "the restarted scheduler caught up")
		}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		time.Sleep(2 * time.Second)
		r = kubectlWith(tokenKubeconfig(t, s, "admin-token", token), "", "patch", "trigger", "every-second", "-n", "alpha",
			"--type", "merge", "-p", `{"definition":{"enabled":false}}`)
		g.Expect(r.ExitCode).To(BeZero(), "%s", r)
		// What the last reconcile before the patch was firing has committed by now.
		time.Sleep(time.Second)

		list := history(admin)
		g.Expect(len(list)).To(BeNumerically(">=", 8), "instants before and after the kill")
		instants := make([]time.Time, 0, len(list))
		ids, tasks := map[string]bool{}, map[string]bool{}
		for _, o := range list {
			g.Expect(o).To(HaveKeyWithValue("outcome", "Submitted"), "fireAll catches up every instant: %v", o)
			g.Expect(o).To(HaveKeyWithValue("kind", "Scheduled"))
			at, err := time.Parse(time.RFC3339, o["scheduledTime"].(string))
			g.Expect(err).NotTo(HaveOccurred())
			instants = append(instants, at)
			g.Expect(ids).NotTo(HaveKey(o["id"]), "no occurrence twice")
			ids[o["id"].(string)] = true
			task := o["taskId"].(string)
			g.Expect(tasks).NotTo(HaveKey(task), "no Task twice")
			tasks[task] = true
		}
		sort.Slice(instants, func(i, j int) bool { return instants[i].Before(instants[j]) })
		for i := 1; i < len(instants); i++ {
			g.Expect(instants[i].Sub(instants[i-1])).To(Equal(time.Second), "no instant lost or duplicated around %s (killed at %s): %v",
				instants[i], killedAt.UTC().Format(time.RFC3339), instants)
		}
		g.Expect(instants[0].Before(killedAt) && instants[len(instants)-1].After(killedAt)).To(BeTrue())

		// Each occurrence is an autonomous Task of the workspace: no Entry, no Interaction.
		for id := range tasks {
			task := admin.must(http.StatusOK, http.MethodGet, "/api/workspaces/alpha/tasks/"+id, "", nil)
			g.Expect(task).NotTo(HaveKey("interactionId"))
			g.Expect(task).To(HaveKeyWithValue("title", "Every second"))
		}
		t.Logf("%d instants from %s to %s, killed at %s", len(instants), instants[0], instants[len(instants)-1], killedAt.UTC())
	})
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
