package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestBootstrapLeavesAHomeWithTheThreeDemoEntriesExecutableWithoutAnAPIKey follows a newcomer:
// the first administrator's bootstrap leaves a workspace whose home Dashboard shows the spec's
// three demo Entries, published and executable offline, discoverable with their owner workspace,
// and one of them runs to its answer with no model key anywhere.
func TestBootstrapLeavesAHomeWithTheThreeDemoEntriesExecutableWithoutAnAPIKey(t *testing.T) {
	g := NewWithT(t)
	s := mustStartServer(t, t.TempDir())
	admin := &api{t: t, base: s.ServiceURL(t)}
	admin.must(http.StatusCreated, http.MethodPost, "/api/auth/bootstrap", "", map[string]any{
		"username": "admin", "password": e2ePassword, "displayName": "Admin", "tenantName": "Acme", "workspaceName": "alpha"})
	identityContext := admin.must(http.StatusOK, http.MethodGet, "/api/identity/context", "alpha", nil)
	workspaceID := identityContext["workspace"].(map[string]any)["id"].(string)

	g.Eventually(func(g Gomega) {
		_, view := admin.call(http.MethodGet, "/api/dashboards/home/view", "alpha", nil)
		entries, _ := view["entries"].([]any)
		g.Expect(entries).To(HaveLen(3), "%v", view)
		var names []string
		for _, e := range entries {
			entry := e.(map[string]any)
			names = append(names, entry["name"].(string))
			g.Expect(entry).To(HaveKeyWithValue("state", "available"))
			g.Expect(entry["entry"]).To(HaveKeyWithValue("targetState", "Executable"), "%v", entry)
		}
		g.Expect(names).To(Equal([]string{"prepare-report", "quick-answer", "guided-request"}))
		g.Expect(entries[0]).To(HaveKeyWithValue("role", "Primary"))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	discovered := admin.must(http.StatusOK, http.MethodGet, "/api/entries?surface=Workplace", "", nil)
	items := discovered["items"].([]any)
	g.Expect(items).To(HaveLen(3))
	for _, item := range items {
		g.Expect(item).To(HaveKeyWithValue("ownerWorkspaceId", workspaceID))
	}

	// quick-answer is Agent-bound: it runs through its agent's Direct Agent Flow, offline.
	published := admin.must(http.StatusOK, http.MethodGet, "/api/entries/quick-answer/published", "alpha", nil)
	target := published["resolvedTarget"].(map[string]any)
	submitted := admin.must(http.StatusAccepted, http.MethodPost, "/api/work/workitems?waitSeconds=10", "alpha", map[string]any{
		"type": "question", "title": "Workspaces", "instruction": "What is a workspace?",
		"flowReference": map[string]any{"name": target["name"], "version": target["version"]}})
	run := submitted["flowRun"].(map[string]any)
	g.Expect(run["state"]).To(Equal("Completed"), "%v", submitted)
	result := admin.must(http.StatusOK, http.MethodGet, "/api/work/workitems/"+submitted["workItem"].(map[string]any)["id"].(string)+"/result", "alpha", nil)
	g.Expect(result).To(HaveKeyWithValue("result", HaveKeyWithValue("output", HaveKeyWithValue("text", ContainSubstring("Here is a quick answer")))), "%v", result)
}

// TestAGitOpsFolderAppliedWithPlatformApplyEndsInPublishedEntries: Agent, Flow and Entry
// manifests in the spec's spelling, applied as a folder, publish themselves with no imperative
// call (publication: Automatic).
func TestAGitOpsFolderAppliedWithPlatformApplyEndsInPublishedEntries(t *testing.T) {
	g := NewWithT(t)
	s := shared(t)
	dir := t.TempDir()
	files := map[string]string{
		"agent.yaml": `apiVersion: platform/v1
kind: Agent
metadata:
  name: gitops-writer
  tags:
    source: git
definition:
  instructions: "@respond Written from Git"
`,
		"flow.yaml": `apiVersion: platform/v1
kind: Flow
metadata:
  name: gitops-write
definition:
  flowKind: Direct
  version: 1.0.0
  publication: Automatic
  target:
    kind: Agent
    id: gitops-writer
`,
		"entries.yaml": `apiVersion: platform/v1
kind: Entry
metadata:
  name: gitops-by-flow
definition:
  publication: Automatic
  binding:
    flow:
      name: gitops-write
  fields:
  - name: request
    role: PrimaryInput
---
apiVersion: platform/v1
kind: Entry
metadata:
  name: gitops-by-agent
definition:
  publication: Automatic
  binding:
    agent:
      name: gitops-writer
  fields:
  - name: request
    role: PrimaryInput
`,
	}
	for name, content := range files {
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600)).To(Succeed())
	}
	t.Cleanup(func() {
		s.deleteEntriesThen(t, "default", []string{"gitops-by-flow", "gitops-by-agent"}, "flows,agents", "gitops-write", "gitops-writer")
	})
	applied := platform(kubectlTimeout, "apply", "-f", dir, "-n", "default", "--kubeconfig", s.Kubeconfig())
	g.Expect(applied.ExitCode).To(Equal(0), applied.String())

	g.Eventually(func(g Gomega) {
		out := s.kubectl("get", "publishedentries", "-n", "default", "-o", "custom-columns=NAME:.metadata.name,FLOW:.definition.resolvedTarget.name,VERSION:.definition.resolvedTarget.version", "--no-headers")
		g.Expect(out.ExitCode).To(Equal(0), out.String())
		lines := strings.Split(strings.TrimSpace(out.Stdout), "\n")
		g.Expect(lines).To(ContainElement(MatchRegexp(`^gitops-by-flow\s+gitops-write\s+1\.0\.0$`)))
		g.Expect(lines).To(ContainElement(MatchRegexp(`^gitops-by-agent\s+direct-gitops-writer\s+1\.0\.0$`)))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}
