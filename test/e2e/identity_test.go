package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// api is a client of the service API with one caller's session cookie.
type api struct {
	t      *testing.T
	base   string
	cookie *http.Cookie
	// transcript, when set, receives every response's headers and body, for tests that search
	// what the API answered.
	transcript *bytes.Buffer
}

func (a *api) call(method, path, workspace string, body any) (int, map[string]any) {
	a.t.Helper()
	var reader io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		reader = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, a.base+path, reader)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if workspace != "" {
		req.Header.Set("X-Platform-Workspace", workspace)
	}
	if a.cookie != nil {
		req.AddCookie(a.cookie)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if a.transcript != nil {
		fmt.Fprintf(a.transcript, "%s %s\n", method, path)
		for name, values := range resp.Header {
			fmt.Fprintf(a.transcript, "%s: %s\n", name, strings.Join(values, ","))
		}
		a.transcript.Write(append(data, '\n'))
	}
	out := map[string]any{}
	_ = json.Unmarshal(data, &out)
	for _, c := range resp.Cookies() {
		if c.Name == "platform-session" && c.Value != "" {
			a.cookie = c
		}
	}
	return resp.StatusCode, out
}

func (a *api) must(want int, method, path, workspace string, body any) map[string]any {
	a.t.Helper()
	status, out := a.call(method, path, workspace, body)
	if status != want {
		a.t.Fatalf("%s %s: status %d, want %d: %v", method, path, status, want, out)
	}
	return out
}

// tokenKubeconfig is the administrator's kubeconfig with its client certificate replaced by a
// bearer token: what a user given a personal access token writes.
func tokenKubeconfig(t *testing.T, s *server, name, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(s.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{name: {Token: token}}
	for _, c := range cfg.Contexts {
		c.AuthInfo = name
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

const e2ePassword = "Correct-Horse-9!"

// bootstrapAlphaAndBeta creates the first administrator, admin, with the workspace alpha, then
// the workspace beta, and returns the administrator's session.
func bootstrapAlphaAndBeta(t *testing.T, base string) *api {
	t.Helper()
	admin := &api{t: t, base: base}
	admin.must(http.StatusCreated, http.MethodPost, "/api/auth/bootstrap", "", map[string]any{
		"username": "admin", "password": e2ePassword, "displayName": "Admin", "tenantName": "Acme", "workspaceName": "alpha"})
	admin.must(http.StatusCreated, http.MethodPost, "/api/identity/workspaces", "alpha", map[string]any{"name": "beta", "displayName": "Beta"})
	return admin
}

// personalAccessToken signs username in and creates a PAT for workspace that allows reading,
// writing and deleting resources (within the caller's roles); it returns a kubeconfig that
// presents the token, and the token's id.
func personalAccessToken(t *testing.T, s *server, base, username, workspace string) (kubeconfig, tokenID string) {
	t.Helper()
	user := &api{t: t, base: base}
	user.must(http.StatusOK, http.MethodPost, "/api/auth/local/login", "", map[string]any{"username": username, "password": e2ePassword})
	out := user.must(http.StatusCreated, http.MethodPost, "/api/identity/pat", "", map[string]any{
		"name": "kubectl", "workspace": workspace, "expiresInDays": 7,
		"permissions": []string{"workspaces/read", "resources/read", "resources/write", "resources/delete"}})
	token, _ := out["token"].(string)
	if !strings.HasPrefix(token, "platform_pat_") {
		t.Fatalf("create PAT: no token in %v", out)
	}
	id, _ := out["id"].(string)
	return tokenKubeconfig(t, s, username, token), id
}

// expectKubectl runs kubectl with kubeconfig and checks whether it succeeds and prints wantText.
func expectKubectl(t *testing.T, kubeconfig string, wantOK bool, wantText string, args ...string) {
	t.Helper()
	r := kubectlWith(kubeconfig, "", args...)
	if (r.ExitCode == 0) != wantOK || !strings.Contains(r.Stdout+r.Stderr, wantText) {
		t.Errorf("kubectl %s: want success=%v with %q, got: %s", strings.Join(args, " "), wantOK, wantText, r)
	}
}

// TestPersonalAccessTokensGiveKubectlTheirWorkspaceAndNothingElse: a Viewer's PAT reads agents
// of its workspace but cannot apply or delete them; a Member's PAT cannot write however wide its
// allow-list; a PAT reaches one workspace only; `kubectl get ns` lists only the caller's
// workspaces; a revoked PAT fails on the next request.
func TestPersonalAccessTokensGiveKubectlTheirWorkspaceAndNothingElse(t *testing.T) {
	requireKubectl(t)
	s := mustStartServer(t, t.TempDir())
	base := s.ServiceURL(t)

	admin := bootstrapAlphaAndBeta(t, base)
	for _, user := range []struct{ name, role string }{{"viewer", "Viewer"}, {"member", "Member"}} {
		admin.must(http.StatusCreated, http.MethodPost, "/api/identity/accounts/", "", map[string]any{
			"username": user.name, "password": e2ePassword, "workspace": "alpha", "role": user.role})
	}
	for _, ns := range []string{"alpha", "beta"} {
		s.mustKubectl(t, "apply", "-f", writeManifest(t, sampleAgent(t, "agent-"+ns, ns)))
	}

	viewer, viewerTokenID := personalAccessToken(t, s, base, "viewer", "alpha")
	member, _ := personalAccessToken(t, s, base, "member", "alpha")
	adminBeta, _ := personalAccessToken(t, s, base, "admin", "beta")

	expect := func(kubeconfig string, wantOK bool, wantText string, args ...string) {
		t.Helper()
		expectKubectl(t, kubeconfig, wantOK, wantText, args...)
	}
	agentAlpha := writeManifest(t, sampleAgent(t, "new-agent", "alpha"))
	agentBeta := writeManifest(t, sampleAgent(t, "new-agent", "beta"))

	expect(viewer, true, "agent-alpha", "get", "agents", "-n", "alpha")
	expect(viewer, false, "forbidden", "apply", "-f", agentAlpha)
	expect(viewer, false, "forbidden", "delete", "agent", "agent-alpha", "-n", "alpha")
	expect(viewer, false, "forbidden", "get", "agents", "-n", "beta")
	expect(viewer, true, "alpha", "get", "ns", "-o", "name")
	if r := kubectlWith(viewer, "", "get", "ns", "-o", "name"); strings.TrimSpace(r.Stdout) != "namespace/alpha" {
		t.Errorf("a Viewer of alpha lists namespaces %q, want only alpha", r.Stdout)
	}
	expect(viewer, true, "platform:principal:", "auth", "whoami")

	expect(member, true, "agent-alpha", "get", "agents", "-n", "alpha")
	expect(member, false, "forbidden", "apply", "-f", agentAlpha)

	// A Platform administrator's PAT for beta, without any membership: beta only.
	expect(adminBeta, true, "created", "apply", "-f", agentBeta)
	expect(adminBeta, false, "forbidden", "get", "agents", "-n", "alpha")
	if r := kubectlWith(adminBeta, "", "get", "ns", "-o", "name"); strings.TrimSpace(r.Stdout) != "namespace/beta" {
		t.Errorf("a PAT for beta lists namespaces %q, want only beta", r.Stdout)
	}

	viewerAPI := &api{t: t, base: base}
	viewerAPI.must(http.StatusOK, http.MethodPost, "/api/auth/local/login", "", map[string]any{"username": "viewer", "password": e2ePassword})
	viewerAPI.must(http.StatusNoContent, http.MethodDelete, "/api/identity/pat/"+viewerTokenID, "", nil)
	expect(viewer, false, "Unauthorized", "get", "agents", "-n", "alpha")
}
