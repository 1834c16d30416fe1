package service_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/ratelimit"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/internal/config"
)

const (
	adminUser     = "Grace.Hopper"
	adminPassword = "Compiler-A0-1952!"
)

var workspaceSeq atomic.Int64

// uniqueWorkspace is a workspace route name no other test of the run uses (they share one kube).
func uniqueWorkspace(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e6, workspaceSeq.Add(1))
}

// localServer is a server in Local mode over a fresh SQLite store. provision, when not nil, runs
// before the namespace provisioner and can make it fail.
func localServer(t *testing.T, provision func(context.Context, identity.Workspace) error) (*httptest.Server, *identity.Service, *store.Store) {
	t.Helper()
	handler, svc, db := localHandler(t, provision)
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)
	return server, svc, db
}

func localHandler(t *testing.T, provision func(context.Context, identity.Workspace) error) (http.Handler, *identity.Service, *store.Store) {
	t.Helper()
	return localHandlerOn(t, store.Options{DataDir: t.TempDir()}, provision)
}

// localHandlerOn is localHandler over the store of opts (see storetest.ForEachDialectOptions).
func localHandlerOn(t *testing.T, opts store.Options, provision func(context.Context, identity.Workspace) error) (http.Handler, *identity.Service, *store.Store) {
	t.Helper()
	db, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := identity.New(db)
	namespaces := httpapi.NamespaceProvisioner(kube)
	api, err := service.New(httpapi.Options{
		Config:       config.FromMap(config.Production, nil),
		Kube:         kube,
		PlatformKube: platformKube,
		Ready:        func(ctx context.Context) error { return env.Server().Ready(ctx) },
		// Identity and ProvisionWorkspace switch on local accounts (the default mode is Local).
		Identity: svc,
		ProvisionWorkspace: func(ctx context.Context, ws identity.Workspace) error {
			if provision != nil {
				if err := provision(ctx, ws); err != nil {
					return err
				}
			}
			return namespaces(ctx, ws)
		},
		RateLimits: &ratelimit.Counter{DB: db, Now: func() time.Time { return limitsClock() }},
	})
	if err != nil {
		t.Fatal(err)
	}
	return api.Handler(), svc, db
}

func bootstrapBody(workspace, password string) string {
	return fmt.Sprintf(`{"username":%q,"password":%q,"displayName":"Grace","tenantName":"Navy","workspaceName":%q}`,
		adminUser, password, workspace)
}

func sessionFrom(g Gomega, r response) *http.Cookie {
	c, err := http.ParseSetCookie(r.header.Get("Set-Cookie"))
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred(), "Set-Cookie: %q", r.header.Get("Set-Cookie"))
	g.ExpectWithOffset(1, c.Name).To(Equal(httpapi.SessionCookie))
	return c
}

func withCookie(c *http.Cookie) []string { return []string{"Cookie", c.Name + "=" + c.Value} }

func TestBootstrapCreatesTheWorkspaceAndSignsIn(t *testing.T) {
	g := NewWithT(t)
	server, svc, _ := localServer(t, nil)
	ws := uniqueWorkspace("boot")

	r := call(t, server, http.MethodGet, "/api/auth/bootstrap", "")
	g.Expect(r.status).To(Equal(http.StatusOK))
	g.Expect(r.body).To(HaveKeyWithValue("initialized", false))

	r = call(t, server, http.MethodPost, "/api/auth/bootstrap", bootstrapBody(ws, "short"))
	expectProblem(g, r, http.StatusUnprocessableEntity)
	g.Expect(r.body["errors"]).To(ContainElements(
		HaveKeyWithValue("message", ContainSubstring("at least 12 characters")),
		HaveKeyWithValue("message", ContainSubstring("an uppercase letter")),
		HaveKeyWithValue("message", ContainSubstring("a digit")),
		HaveKeyWithValue("message", ContainSubstring("a non-alphanumeric character")),
	))
	g.Expect(r.body["errors"]).To(HaveEach(HaveKeyWithValue("location", "body.password")))

	r = call(t, server, http.MethodPost, "/api/auth/bootstrap", bootstrapBody("Not_A_Label", adminPassword))
	expectProblem(g, r, http.StatusUnprocessableEntity)
	g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", "body.workspaceName")))

	r = call(t, server, http.MethodPost, "/api/auth/bootstrap", bootstrapBody(ws, adminPassword))
	g.Expect(r.status).To(Equal(http.StatusCreated), "body: %v", r.body)
	g.Expect(r.body).To(HaveKeyWithValue("workspace", ws))
	cookie := sessionFrom(g, r)
	g.Expect(cookie.HttpOnly).To(BeTrue())
	g.Expect(cookie.SameSite).To(Equal(http.SameSiteLaxMode))
	g.Expect(cookie.Path).To(Equal("/"))
	g.Expect(cookie.Secure).To(BeFalse(), "plain HTTP here; Secure over TLS")
	g.Expect(kube.Get(context.Background(), client.ObjectKey{Name: ws}, &corev1.Namespace{})).To(Succeed(), "the workspace's namespace exists")

	r = call(t, server, http.MethodGet, "/api/auth/bootstrap", "")
	g.Expect(r.body).To(HaveKeyWithValue("initialized", true))
	expectProblem(g, call(t, server, http.MethodPost, "/api/auth/bootstrap", bootstrapBody(uniqueWorkspace("again"), adminPassword)), http.StatusConflict)

	// The bootstrap session works in the new workspace, which is the caller's default.
	g.Expect(call(t, server, http.MethodGet, "/api/agents", "", withCookie(cookie)...).status).To(Equal(http.StatusOK))

	events, err := svc.Audit.Latest(context.Background(), 0)
	g.Expect(err).NotTo(HaveOccurred())
	var actions []string
	for _, e := range events {
		actions = append(actions, e.Action)
	}
	g.Expect(actions).To(ContainElements("instance.bootstrapped", "local-account.created", "platform-administrator.granted"))
}

func TestAFailedProvisioningLeavesNoAccountAndBootstrapCanBeRetried(t *testing.T) {
	g := NewWithT(t)
	var fail atomic.Bool
	fail.Store(true)
	server, _, db := localServer(t, func(context.Context, identity.Workspace) error {
		if fail.Load() {
			return errors.New("namespace quota exceeded")
		}
		return nil
	})
	ws := uniqueWorkspace("comp")
	r := call(t, server, http.MethodPost, "/api/auth/bootstrap", bootstrapBody(ws, adminPassword))
	expectProblem(g, r, http.StatusServiceUnavailable)
	g.Expect(r.header.Values("Set-Cookie")).To(BeEmpty())
	g.Expect(call(t, server, http.MethodGet, "/api/auth/bootstrap", "").body).To(HaveKeyWithValue("initialized", false))
	var accounts int
	g.Expect(db.DB().QueryRow(`SELECT COUNT(*) FROM local_accounts`).Scan(&accounts)).To(Succeed())
	g.Expect(accounts).To(BeZero())
	expectProblem(g, call(t, server, http.MethodPost, "/api/auth/local/login", fmt.Sprintf(`{"username":%q,"password":%q}`, adminUser, adminPassword)), http.StatusUnauthorized)

	fail.Store(false)
	r = call(t, server, http.MethodPost, "/api/auth/bootstrap", bootstrapBody(ws, adminPassword))
	g.Expect(r.status).To(Equal(http.StatusCreated), "body: %v", r.body)
}

func TestLocalSignInSelectsOnlyTheCallersWorkspacesAndSignOutEndsTheSession(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	server, svc, db := localServer(t, nil)
	ws := uniqueWorkspace("home")
	g.Expect(call(t, server, http.MethodPost, "/api/auth/bootstrap", bootstrapBody(ws, adminPassword)).status).To(Equal(http.StatusCreated))

	login := func(user, pass string) response {
		return call(t, server, http.MethodPost, "/api/auth/local/login", fmt.Sprintf(`{"username":%q,"password":%q}`, user, pass))
	}
	wrong, unknown := login(adminUser, "Wrong-Password-1!"), login("nobody", adminPassword)
	expectProblem(g, wrong, http.StatusUnauthorized)
	g.Expect(unknown.status).To(Equal(http.StatusUnauthorized))
	g.Expect(unknown.body).To(Equal(wrong.body), "the answer does not tell an unknown user from a wrong password")

	r := login(adminUser, adminPassword)
	g.Expect(r.status).To(Equal(http.StatusOK), "body: %v", r.body)
	g.Expect(r.body).To(HaveKeyWithValue("workspace", ws))
	admin := sessionFrom(g, r)
	g.Expect(admin.HttpOnly).To(BeTrue())

	expectProblem(g, call(t, server, http.MethodGet, "/api/agents", ""), http.StatusUnauthorized)
	g.Expect(call(t, server, http.MethodGet, "/api/agents", "", withCookie(admin)...).status).To(Equal(http.StatusOK))
	// A namespace that is no workspace is not found, even for a Platform administrator.
	expectProblem(g, call(t, server, http.MethodGet, "/api/agents", "", append(withCookie(admin), httpapi.WorkspaceHeader, "kube-system")...), http.StatusNotFound)

	// A second user without membership finds no workspace; with a membership it finds that one.
	_, member, err := svc.CreateLocalAccount(ctx, "", identity.NewLocalAccount{Username: "Alan", Password: adminPassword})
	g.Expect(err).NotTo(HaveOccurred())
	r = login("Alan", adminPassword)
	g.Expect(r.status).To(Equal(http.StatusOK))
	alan := sessionFrom(g, r)
	expectProblem(g, call(t, server, http.MethodGet, "/api/agents", "", append(withCookie(alan), httpapi.WorkspaceHeader, ws)...), http.StatusNotFound)

	var tenantID string
	g.Expect(db.DB().QueryRow(`SELECT id FROM tenants`).Scan(&tenantID)).To(Succeed())
	other := uniqueWorkspace("other")
	otherWS, err := svc.CreateWorkspace(ctx, tenantID, other, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(httpapi.NamespaceProvisioner(kube)(ctx, otherWS)).To(Succeed())
	_, err = db.DB().Exec(`INSERT INTO memberships (principal_id, scope_kind, scope_id, role, created_at) VALUES (?, 'workspace', ?, 'Member', ?)`,
		member.ID, otherWS.ID, time.Now().UTC())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(call(t, server, http.MethodGet, "/api/agents", "", withCookie(alan)...).status).To(Equal(http.StatusOK), "the membership's workspace is Alan's default")
	expectProblem(g, call(t, server, http.MethodGet, "/api/agents", "", append(withCookie(alan), httpapi.WorkspaceHeader, ws)...), http.StatusNotFound)
	g.Expect(call(t, server, http.MethodGet, "/api/agents", "", append(withCookie(admin), httpapi.WorkspaceHeader, other)...).status).
		To(Equal(http.StatusOK), "a Platform administrator may select any active workspace")

	// A cross-site state-changing request is refused before it reaches the handler.
	expectProblem(g, call(t, server, http.MethodPost, "/api/auth/logout", "",
		append(withCookie(admin), "Origin", "https://attacker.example", "Sec-Fetch-Site", "cross-site")...), http.StatusForbidden)
	g.Expect(call(t, server, http.MethodGet, "/api/agents", "", withCookie(admin)...).status).To(Equal(http.StatusOK), "still signed in")

	r = call(t, server, http.MethodPost, "/api/auth/logout", "", withCookie(admin)...)
	g.Expect(r.status).To(Equal(http.StatusNoContent), "body: %v", r.body)
	cleared := sessionFrom(g, r)
	g.Expect(cleared.MaxAge).To(BeNumerically("<", 0))
	expectProblem(g, call(t, server, http.MethodGet, "/api/agents", "", withCookie(admin)...), http.StatusUnauthorized)
	expectProblem(g, call(t, server, http.MethodPost, "/api/auth/logout", "", withCookie(admin)...), http.StatusUnauthorized)

	events, err := svc.Audit.Latest(ctx, 0)
	g.Expect(err).NotTo(HaveOccurred())
	var actions []string
	for _, e := range events {
		actions = append(actions, e.Action)
		for _, v := range []string{e.ActorID, e.TargetID, e.TenantID, e.WorkspaceID, e.ReasonCode, e.CorrelationID} {
			g.Expect(v).NotTo(BeElementOf(adminUser, adminPassword, "Alan", "nobody", admin.Value, alan.Value, ws), "audit holds no secrets or names")
		}
	}
	g.Expect(actions).To(ContainElements("instance.bootstrapped", "local-account.login", "local-account.logout"))
}

func TestTheSessionCookieIsSecureOverTLS(t *testing.T) {
	g := NewWithT(t)
	handler, _, _ := localHandler(t, nil)
	server := httptest.NewTLSServer(handler)
	t.Cleanup(server.Close)
	resp, err := server.Client().Post(server.URL+"/api/auth/bootstrap", "application/json",
		strings.NewReader(bootstrapBody(uniqueWorkspace("tls"), adminPassword)))
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusCreated))
	cookies := resp.Cookies()
	g.Expect(cookies).To(HaveLen(1))
	g.Expect(cookies[0].Secure).To(BeTrue())
	g.Expect(cookies[0].HttpOnly).To(BeTrue())
}

func TestProblemDetailsNeverEchoTheSubmittedValues(t *testing.T) {
	g := NewWithT(t)
	server, _, _ := localServer(t, nil)
	secret := "Secret-" + strings.Repeat("x", 1100) + "-1!"
	for _, body := range []string{
		bootstrapBody(uniqueWorkspace("echo"), secret),    // longer than maxLength
		`{"username":"a","password":"Secret-Not-JSON-1!"`, // malformed JSON
		`{"username":"a","password":12345678901234}`,      // wrong type
	} {
		req, _ := http.NewRequest(http.MethodPost, server.URL+"/api/auth/bootstrap", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(BeNumerically(">=", 400))
		g.Expect(string(raw)).NotTo(ContainSubstring("Secret-"), "the response must not echo the password")
		g.Expect(string(raw)).NotTo(ContainSubstring("12345678901234"))
	}
}
