package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/etcd"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/test/signalr/signalrtest"
)

// hubEvents are the spec's twelve event names.
var hubEvents = []string{
	"InteractionUpdated", "MessageAdded", "PendingActionCreated", "PendingActionResolved", "TaskCreated", "TaskStatusChanged",
	"TaskActivityAdded", "TaskResultAdded", "TaskArtifactAdded", "NotificationCreated", "NotificationUpdated",
	"UnreadNotificationCountChanged",
}

// hubEnv is the environment of the hub tests' servers: revalidation every second, so that a
// revoked credential is noticed quickly, and one allowed Workplace origin.
var hubEnv = []string{
	"PLATFORM_ENVIRONMENT=Testing",
	"AI__Provider=Deterministic",
	"Platform__Hub__RevalidateSeconds=1",
	"Platform__Hub__AllowedOrigins=http://workplace.example:5180",
}

// apiClient calls the service API with a session cookie or a bearer token.
type apiClient struct {
	t      *testing.T
	base   string
	cookie string
	token  string
}

func (c apiClient) call(method, path, body string) (int, map[string]any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cookie != "" {
		req.Header.Set("Cookie", c.cookie)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (c apiClient) must(status int, method, path, body string) map[string]any {
	c.t.Helper()
	got, out := c.call(method, path, body)
	if got != status {
		c.t.Fatalf("%s %s: status %d, want %d: %v", method, path, got, status, out)
	}
	return out
}

// startHubServer starts `platform serve` on a fixed service port (so that a restart keeps the
// hub's URL) and bootstraps it; it returns the server, its port and the administrator's client.
func startHubServer(t *testing.T, dataDir string, port int, env []string, args ...string) *server {
	t.Helper()
	s, err := startServerEnv(dataDir, env, append([]string{"--http-addr", "127.0.0.1:" + strconv.Itoa(port)}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func stopHubServer(t *testing.T, s *server) {
	t.Helper()
	if code, _, err := s.stop(); err != nil || code != 0 {
		t.Errorf("server did not stop cleanly (exit code %d, %v):\n%s", code, err, s.output())
	}
}

// login signs a local account in and returns its client.
func login(t *testing.T, base, username string) apiClient {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/auth/local/login", strings.NewReader(
		`{"username":"`+username+`","password":"Change-me-1st!"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login %s: %d", username, resp.StatusCode)
	}
	var cookies []string
	for _, c := range resp.Cookies() {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	return apiClient{t: t, base: base, cookie: strings.Join(cookies, "; ")}
}

// bootstrapAdmin bootstraps the instance (workspace default) and waits for its demo Entries.
func bootstrapAdmin(t *testing.T, base string) apiClient {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/auth/bootstrap", strings.NewReader(
		`{"username":"admin","password":"Change-me-1st!","tenantName":"Acme","workspaceName":"default"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("bootstrap: %d", resp.StatusCode)
	}
	var cookies []string
	for _, c := range resp.Cookies() {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	admin := apiClient{t: t, base: base, cookie: strings.Join(cookies, "; ")}
	// The demo Entries that bootstrap seeds are published by the controllers, a moment later.
	NewWithT(t).Eventually(func(g Gomega) {
		_, view := admin.call(http.MethodGet, "/api/dashboards/home/view", "")
		entries, _ := view["entries"].([]any)
		g.Expect(entries).To(HaveLen(3), "%v", view)
		for _, e := range entries {
			g.Expect(e).To(HaveKeyWithValue("entry", HaveKeyWithValue("targetState", "Executable")), "%v", e)
		}
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return admin
}

// setupUploadEntry creates and publishes the Entry "upload", whose flow asks for a file: its
// answer becomes the Task's artifact.
func setupUploadEntry(admin apiClient) {
	admin.t.Helper()
	admin.must(http.StatusCreated, http.MethodPost, "/api/agents", `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"filer"},`+
		`"definition":{"instructions":"@respond Filed"}}`)
	admin.must(http.StatusCreated, http.MethodPost, "/api/flows", `{"name":"upload","kind":"Orchestration","definition":{"steps":[`+
		`{"name":"in","type":"Input"},{"name":"file","type":"Agent","agent":{"name":"filer"},"suspend":{"kind":"File","prompt":"Attach the notes"}},`+
		`{"name":"out","type":"Output","message":"Filed"}],"edges":[{"from":"in","to":"file"},{"from":"file","to":"out"}]}}`)
	admin.must(http.StatusCreated, http.MethodPost, "/api/flows/upload/versions", `{"version":"1.0.0","activate":true}`)
	admin.must(http.StatusCreated, http.MethodPost, "/api/entries", `{"apiVersion":"platform/v1","kind":"Entry","metadata":{"name":"upload"},`+
		`"definition":{"fields":[{"name":"title","role":"PrimaryInput"}],"task":{"display":"Visible"},"binding":{"flow":{"name":"upload"}}}}`)
	admin.must(http.StatusOK, http.MethodPost, "/api/entries/upload/publish", "")
}

// answer answers the question an exchange of the Workplace routes asks.
func (c apiClient) answer(exchange map[string]any, answer string) map[string]any {
	c.t.Helper()
	interaction := exchange["interaction"].(map[string]any)["id"].(string)
	action := exchange["action"].(map[string]any)["pendingAction"].(map[string]any)["id"].(string)
	return c.must(http.StatusOK, http.MethodPost, "/api/workspaces/default/interactions/"+interaction+"/pending-actions/"+action+
		"/responses?waitSeconds=10", `{"resumeToken":"`+exchange["resumeToken"].(string)+`",`+answer+`}`)
}

// prepareReport opens a prepare-report conversation and answers its choice and confirmation.
func prepareReport(c apiClient) {
	c.t.Helper()
	opened := c.must(http.StatusCreated, http.MethodPost, "/api/workspaces/default/entries/prepare-report/interactions?waitSeconds=10",
		`{"input":{"request":"Quarterly sales"}}`)
	confirm := c.answer(opened, `"value":"table"`)
	done := c.answer(confirm, `"confirmed":true`)
	if done["action"].(map[string]any)["type"] != "createTask" {
		c.t.Fatalf("prepare-report did not create its Task: %v", done)
	}
}

func hubFreePort(t *testing.T) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestTheOfficialSignalRClientHearsTheWorkplaceOfTheWorkspaceItJoined drives the hub with the
// official @microsoft/signalr client as the Workplace UI does: it connects with a session cookie
// and with a personal access token, joins its workspace (and is refused another's, and refused
// from a foreign origin), hears each of the twelve events from real operations over the
// Workplace routes, loses a revoked token's connection within seconds, and after a server restart
// reconnects by itself, joins again and reads the state over REST.
func TestTheOfficialSignalRClientHearsTheWorkplaceOfTheWorkspaceItJoined(t *testing.T) {
	signalrtest.Available(t)
	g := NewWithT(t)
	dataDir, port := filepath.Join(t.TempDir(), "data"), hubFreePort(t)
	s := startHubServer(t, dataDir, port, hubEnv)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stopHubServer(t, s)
		}
	})
	base := s.ServiceURL(t)
	hubURL := base + "/hubs/workplace"
	admin := bootstrapAdmin(t, base)
	admin.must(http.StatusCreated, http.MethodPost, "/api/identity/workspaces", `{"name":"other"}`)
	pat := admin.must(http.StatusCreated, http.MethodPost, "/api/identity/pat",
		`{"name":"hub","workspace":"default","permissions":["workspaces/read","runs/read","runs/execute"],"expiresInDays":1}`)
	token := pat["token"].(string)
	workspace := admin.must(http.StatusOK, http.MethodGet, "/api/identity/context", "")["workspace"].(map[string]any)
	workspaceID := workspace["id"].(string)

	withCookie := signalrtest.Start(t, signalrtest.Options{URL: hubURL, Cookie: admin.cookie, ReconnectEvery: 500 * time.Millisecond})
	withToken := signalrtest.Start(t, signalrtest.Options{URL: hubURL, Token: token})
	withCookie.Started()
	withToken.Started()
	g.Expect(withCookie.Invoke("JoinWorkspace", "default")).To(BeEmpty(), "a member joins by route name")
	g.Expect(withToken.Invoke("JoinWorkspace", workspaceID)).To(BeEmpty(), "and by id")
	g.Expect(withToken.Invoke("JoinWorkspace", "other")).To(ContainSubstring("not found"),
		"a personal access token reaches its own workspace only")
	g.Expect(withToken.Invoke("Subscribe", "default")).To(ContainSubstring("unknown hub method"))

	t.Run("a foreign origin is refused at negotiate and at the upgrade; the configured Workplace origin is not", func(t *testing.T) {
		g := NewWithT(t)
		foreign := signalrtest.Start(t, signalrtest.Options{URL: hubURL, Token: token, Origin: "http://evil.example"})
		g.Expect(foreign.StartFailure()).To(ContainSubstring("403"))
		direct := signalrtest.Start(t, signalrtest.Options{URL: hubURL, Token: token, Origin: "http://evil.example", SkipNegotiation: true})
		g.Expect(direct.StartFailure()).NotTo(BeEmpty())
		allowed := signalrtest.Start(t, signalrtest.Options{URL: hubURL, Token: token, Origin: "http://workplace.example:5180"})
		allowed.Started()
		allowed.Stop()
	})

	t.Run("each of the twelve events reaches both clients, with ids and versions only", func(t *testing.T) {
		g := NewWithT(t)
		setupUploadEntry(admin)
		prepareReport(admin)
		opened := admin.must(http.StatusCreated, http.MethodPost, "/api/workspaces/default/entries/upload/interactions?waitSeconds=10",
			`{"input":{"title":"Notes"}}`)
		admin.answer(opened, `"file":{"name":"notes.txt","mediaType":"text/plain","contentBase64":"`+
			base64.StdEncoding.EncodeToString([]byte("the notes"))+`"}`)
		admin.must(http.StatusOK, http.MethodPost, "/api/workspaces/default/notifications/read-all", "")
		for _, client := range []*signalrtest.Client{withCookie, withToken} {
			for _, name := range hubEvents {
				e := client.Wait(30*time.Second, name, signalrtest.Event(name))
				g.Expect(e.Payload()).To(HaveKeyWithValue("workspaceId", workspaceID), name)
				for key := range e.Payload() {
					g.Expect(strings.ToLower(key)).NotTo(Or(ContainSubstring("token"), ContainSubstring("hash"), ContainSubstring("prompt")), name)
				}
			}
		}
	})

	t.Run("a revoked token stops its connection within seconds", func(t *testing.T) {
		g := NewWithT(t)
		mark := withToken.Mark()
		began := time.Now()
		admin.must(http.StatusNoContent, http.MethodDelete, "/api/identity/pat/"+pat["id"].(string), "")
		closed := withToken.WaitAfter(mark, 15*time.Second, "close", signalrtest.OfType("closed"))
		g.Expect(closed["error"]).To(ContainSubstring("no longer authenticates"))
		t.Logf("closed %s after the revocation", time.Since(began).Round(100*time.Millisecond))
	})

	t.Run("a removed membership and a disabled account stop their connections within seconds", func(t *testing.T) {
		g := NewWithT(t)
		listeners := map[string]*signalrtest.Client{}
		accounts := map[string]map[string]any{}
		for _, name := range []string{"member", "leaver"} {
			accounts[name] = admin.must(http.StatusCreated, http.MethodPost, "/api/identity/accounts/",
				`{"username":"`+name+`","password":"Change-me-1st!","workspace":"default","role":"Member"}`)
			listeners[name] = signalrtest.Start(t, signalrtest.Options{URL: hubURL, Cookie: login(t, base, name).cookie})
		}
		for _, c := range listeners {
			c.Started()
			g.Expect(c.Invoke("JoinWorkspace", "default")).To(BeEmpty())
		}
		admin.must(http.StatusNoContent, http.MethodDelete, "/api/identity/workspaces/"+workspaceID+"/memberships/"+
			accounts["leaver"]["principalId"].(string), "")
		closed := listeners["leaver"].Wait(15*time.Second, "close after the membership's removal", signalrtest.OfType("closed"))
		g.Expect(closed["error"]).To(ContainSubstring("may no longer listen"))
		admin.must(http.StatusOK, http.MethodPut, "/api/identity/accounts/"+accounts["member"]["accountId"].(string)+"/status",
			`{"status":"Disabled"}`)
		closed = listeners["member"].Wait(15*time.Second, "close after the account was disabled", signalrtest.OfType("closed"))
		g.Expect(closed["error"]).To(ContainSubstring("no longer authenticates"))
	})

	t.Run("after a server restart the client reconnects, joins again and reads over REST", func(t *testing.T) {
		g := NewWithT(t)
		mark := withCookie.Mark()
		stopHubServer(t, s)
		stopped = true
		withCookie.WaitAfter(mark, 15*time.Second, "reconnecting after the server's Close", signalrtest.OfType("reconnecting"))
		s = startHubServer(t, dataDir, port, hubEnv)
		stopped = false
		withCookie.WaitAfter(mark, 90*time.Second, "reconnection", signalrtest.OfType("reconnected"))
		g.Expect(withCookie.Invoke("JoinWorkspace", "default")).To(BeEmpty())
		list := admin.must(http.StatusOK, http.MethodGet, "/api/workspaces/default/interactions?take=10", "")
		g.Expect(list["items"]).NotTo(BeEmpty(), "REST is authoritative after a reconnection")
		mark = withCookie.Mark()
		prepareReport(admin)
		withCookie.WaitAfter(mark, 30*time.Second, "TaskStatusChanged after the restart", signalrtest.Event("TaskStatusChanged"))
	})
}

// TestAnEventCausedOnOneReplicaReachesAClientOfAnother runs two `platform serve` replicas on one
// PostgreSQL database (and one etcd): a client of the second hears what the first commits,
// through PostgreSQL's LISTEN/NOTIFY.
func TestAnEventCausedOnOneReplicaReachesAClientOfAnother(t *testing.T) {
	signalrtest.Available(t)
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		if opts.DatabaseURL == "" {
			t.Skip("replicas share a PostgreSQL database")
		}
		g := NewWithT(t)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		shared, err := etcd.Start(ctx, filepath.Join(t.TempDir(), "etcd"), time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(shared.Stop)
		args := []string{"--database-url", opts.DatabaseURL, "--etcd-servers", shared.ClientURL()}
		first := startHubServer(t, filepath.Join(t.TempDir(), "first"), hubFreePort(t), hubEnv, args...)
		t.Cleanup(func() { stopHubServer(t, first) })
		second := startHubServer(t, filepath.Join(t.TempDir(), "second"), hubFreePort(t), hubEnv, args...)
		t.Cleanup(func() { stopHubServer(t, second) })

		admin := bootstrapAdmin(t, first.ServiceURL(t))
		client := signalrtest.Start(t, signalrtest.Options{URL: second.ServiceURL(t) + "/hubs/workplace", Cookie: admin.cookie})
		client.Started()
		g.Expect(client.Invoke("JoinWorkspace", "default")).To(BeEmpty())
		mark := client.Mark()
		admin.must(http.StatusCreated, http.MethodPost, "/api/workspaces/default/entries/prepare-report/interactions?waitSeconds=10",
			`{"input":{"request":"Quarterly sales"}}`)
		e := client.WaitAfter(mark, 30*time.Second, "MessageAdded from the other replica", signalrtest.Event("MessageAdded"))
		g.Expect(e.Payload()).To(HaveKey("interactionId"))
		client.WaitAfter(mark, 30*time.Second, "NotificationCreated", signalrtest.Event("NotificationCreated"))
		// Marking read runs no run transition that the second replica's executor could have
		// committed itself: only the first replica's notification tells the second.
		mark = client.Mark()
		admin.must(http.StatusOK, http.MethodPost, "/api/workspaces/default/notifications/read-all", "")
		client.WaitAfter(mark, 30*time.Second, "NotificationUpdated from the other replica", signalrtest.Event("NotificationUpdated"))
	})
}
