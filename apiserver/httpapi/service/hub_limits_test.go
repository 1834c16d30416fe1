package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/ratelimit"
	"platform.dev/platform/apiserver/store"
)

// hubClient speaks the SignalR JSON hub protocol on one connection, as a browser's client does.
type hubClient struct {
	t    *testing.T
	conn *websocket.Conn
	next int
}

// dialHub negotiated connection token's socket with headers (a cookie), and shakes hands.
func dialHub(t *testing.T, e *identityEnv, token string, headers ...string) *hubClient {
	t.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.server.URL, "http")+"/hubs/workplace?id="+token, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	c := &hubClient{t: t, conn: conn}
	c.write(`{"protocol":"json","version":1}`)
	if m := c.read(); len(m) != 0 {
		t.Fatalf("handshake answered %v", m)
	}
	return c
}

func (c *hubClient) write(s string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, []byte(s+"\x1e")); err != nil {
		c.t.Fatal(err)
	}
}

// read reads the next message (the handshake's answer is {}).
func (c *hubClient) read() map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, data, err := c.conn.Read(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSuffix(string(data), "\x1e")), &m); err != nil {
		c.t.Fatalf("%q: %v", data, err)
	}
	return m
}

// invoke calls a hub method and answers its completion's error ("" when it succeeded).
func (c *hubClient) invoke(target string, args ...any) string {
	c.t.Helper()
	c.next++
	id := string(rune('0' + c.next))
	b, _ := json.Marshal(map[string]any{"type": 1, "invocationId": id, "target": target, "arguments": args})
	c.write(string(b))
	for {
		m := c.read()
		if m["type"] == float64(3) && m["invocationId"] == id {
			errText, _ := m["error"].(string)
			return errText
		}
	}
}

// TestTheHubHoldsSessionsToALimitPerPrincipalAndRefusesARefusedCredentialBeforeItsAuthentication:
// a signed-in person's negotiations, upgrades and invocations count per Principal under the
// workspace's token-requests-per-second, as a token's do: past it, a negotiation is answered 429
// with Retry-After and an invocation gets the hub's completion error; another person counts
// apart. A credential refused lately is refused before its authentication while its window is
// full: a session signed out meanwhile, or a token revoked, is answered 429, not 401.
func TestTheHubHoldsSessionsToALimitPerPrincipalAndRefusesARefusedCredentialBeforeItsAuthentication(t *testing.T) {
	g := NewWithT(t)
	db, err := store.Open(context.Background(), store.Options{DataDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { db.Close() })
	e := newIdentityEnv(t, db)
	e.account("ann", e.ws, identity.RoleMember)
	e.account("bob", e.ws, identity.RoleMember)
	ann, bob := e.signIn("ann", adminPassword), e.signIn("bob", adminPassword)
	annotateWorkspace(t, e.ws.RouteName, map[string]string{ratelimit.TokenRequestsPerSecondAnnotation: "3"})
	// The server reads the annotation from its informer: wait until it has it.
	g.Eventually(func() any {
		return e.do(e.adminCookie, http.MethodGet, "/api/workspaces/"+e.ws.RouteName+"/limits", "").body["tokenRequestsPerSecond"]
	}).WithTimeout(10 * time.Second).Should(BeNumerically("==", 3))
	stopLimitsClock(t)
	negotiate := func(headers ...string) response {
		return call(t, e.server, http.MethodPost, "/hubs/workplace/negotiate?negotiateVersion=1", "", headers...)
	}

	// Negotiate (1), upgrade (2) and JoinWorkspace (3) pass; the next invocation is refused.
	r := negotiate(withCookie(ann)...)
	g.Expect(r.status).To(Equal(http.StatusOK), "%v", r.body)
	hub := dialHub(t, e, r.body["connectionToken"].(string), withCookie(ann)...)
	g.Expect(hub.invoke("JoinWorkspace", e.ws.RouteName)).To(BeEmpty())
	g.Expect(hub.invoke("JoinWorkspace", e.ws.RouteName)).To(Equal(
		"the limit of 3 requests per second of each signed-in person on the hub is reached; retry after 1 s"))
	r = negotiate(withCookie(ann)...)
	g.Expect(r.status).To(Equal(http.StatusTooManyRequests), "%v", r.body)
	g.Expect(r.header.Get("Retry-After")).To(Equal("1"))
	g.Expect(r.body["detail"]).To(ContainSubstring("each signed-in person on the hub"))
	g.Expect(negotiate(withCookie(bob)...).status).To(Equal(http.StatusOK), "another person of the workspace counts apart")

	g.Expect(e.do(ann, http.MethodPost, "/api/auth/logout", "").status).To(BeNumerically("<", 300))
	r = negotiate(withCookie(ann)...)
	g.Expect(r.status).To(Equal(http.StatusTooManyRequests), "refused before its authentication: %v", r.body)

	// A token's: refused once, then refused again before its authentication, even revoked.
	acct := e.account("cy", e.ws, identity.RoleMember)
	pat, token, err := e.svc.CreatePAT(context.Background(), acct.PrincipalID, identity.NewPAT{PrincipalID: acct.PrincipalID, WorkspaceID: e.ws.ID,
		Name: "listener", Permissions: identity.PermissionsOf(identity.PermRunsRead), ExpiresAt: time.Now().Add(time.Hour)})
	g.Expect(err).NotTo(HaveOccurred())
	for i := range 3 {
		g.Expect(negotiate(bearer(token)...).status).To(Equal(http.StatusOK), "negotiation %d of the token's 3 a second", i+1)
	}
	r = negotiate(bearer(token)...)
	g.Expect(r.status).To(Equal(http.StatusTooManyRequests))
	g.Expect(r.body["detail"]).To(ContainSubstring("requests per second with this access token"))
	g.Expect(e.svc.RevokePAT(context.Background(), acct.PrincipalID, acct.PrincipalID, pat.ID)).To(Succeed())
	r = negotiate(bearer(token)...)
	g.Expect(r.status).To(Equal(http.StatusTooManyRequests), "a revoked token whose window is full: 429 before its authentication, %v", r.body)
	g.Expect(r.header.Get("Retry-After")).To(Equal("1"))
}
