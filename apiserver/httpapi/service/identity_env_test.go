package service_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/executor"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/packprojects"
	"platform.dev/platform/apiserver/packs"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/ratelimit"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/apiserver/sourceregistries"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/tools"
	"platform.dev/platform/apiserver/tools/aep"
	"platform.dev/platform/apiserver/triggers"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/apiserver/workplace"
	"platform.dev/platform/internal/config"
)

// identityEnv is a Local-mode server over one store (of either dialect), bootstrapped through the
// API: its Platform administrator (no membership) and its workspace.
type identityEnv struct {
	t         testing.TB
	workplace *workplace.Store
	server    *httptest.Server
	api       huma.API
	svc       *identity.Service
	db        *store.Store

	admin       identity.Principal
	adminCookie *http.Cookie
	ws          identity.Workspace

	// vault is the Local Vault of the server, initialized; values writes and opens values as
	// platform serve's Secrets service does.
	vault  *secrets.LocalVault
	values *secrets.Service
	// tools is the server's tool provider manager.
	tools *tools.Manager
}

func newIdentityEnv(t testing.TB, db *store.Store) *identityEnv {
	t.Helper()
	g := NewWithT(t)
	svc := identity.New(db)
	cfg := config.FromMap(config.Production, nil)
	// The Work routes run on the same store, with an executor that revalidates runs/execute
	// against the identity service as platform serve's does.
	workStore := work.New(db)
	places := workplace.NewStore(db, workStore, workplace.FileArtifacts{Dir: filepath.Join(t.TempDir(), "artifacts")})
	workStore.Observer = places
	authorize, err := httpapi.RunAuthorizer(cfg, svc)
	g.Expect(err).NotTo(HaveOccurred())
	exec, err := executor.New(executor.Options{Work: workStore, Resolver: executor.KubeResolver{Client: kube},
		Provider: provider.DeterministicProvider{}, Authorize: authorize, Poll: 20 * time.Millisecond, Artifacts: places.Blobs})
	g.Expect(err).NotTo(HaveOccurred())
	execCtx, stopExec := context.WithCancel(context.Background())
	execDone := make(chan struct{})
	go func() { defer close(execDone); exec.Run(execCtx) }()
	t.Cleanup(func() { stopExec(); <-execDone })
	vault := &secrets.LocalVault{Store: db, MasterKey: secrets.MasterKeySource{File: filepath.Join(t.TempDir(), secrets.KeyFileName)}}
	_, err = vault.Initialize()
	g.Expect(err).NotTo(HaveOccurred())
	access, err := httpapi.TriggerAccess(cfg, svc, kube)
	g.Expect(err).NotTo(HaveOccurred())
	values := &secrets.Service{Resolver: &secrets.Resolver{Reader: kube, Tree: secrets.IdentityTree{Identity: svc, Namespaces: secrets.KubeNamespaces(kube)}}, Vault: vault}
	// The server listens before it is built, so that extensions redeem capabilities at it.
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	toolManager, err := tools.NewManager(tools.Options{Kube: kube, Secrets: tools.VaultSecrets(values),
		RedeemURL: "http://" + listener.Addr().String() + aep.RedeemPath})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(toolManager.Close)
	api, err := service.New(httpapi.Options{
		Config:       cfg,
		Kube:         kube,
		PlatformKube: platformKube,
		Secrets:      values,
		Tools:        toolManager,
		Ready:        func(ctx context.Context) error { return env.Server().Ready(ctx) },
		// Identity and ProvisionWorkspace switch on local accounts (the default mode is Local).
		Identity:           svc,
		ProvisionWorkspace: httpapi.NamespaceProvisioner(kube),
		Work:               workStore,
		Workplace:          places,
		Executor:           exec,
		Triggers:           &triggers.Service{DB: db, Work: workStore, Kube: platformKube, Access: access},
		PackProjects:       packprojects.NewStore(db),
		Packs:              &packs.Store{DB: db},
		Registries:         &sourceregistries.Store{DB: db},
		RegistryFetchers:   fakeRegistryFetchers,
		RateLimits:         &ratelimit.Counter{DB: db, Now: func() time.Time { return limitsClock() }},
	})
	g.Expect(err).NotTo(HaveOccurred())
	server := httptest.NewUnstartedServer(api.Handler())
	server.Listener.Close()
	server.Listener = listener
	server.Start()
	t.Cleanup(server.Close)
	e := &identityEnv{t: t, server: server, api: api.API(), svc: svc, db: db, workplace: places, vault: vault, values: values, tools: toolManager}
	admissionIdentity.Store(svc)
	t.Cleanup(func() { admissionIdentity.CompareAndSwap(svc, nil) })

	r := call(t, server, http.MethodPost, "/api/auth/bootstrap", bootstrapBody(uniqueWorkspace("id"), adminPassword))
	g.Expect(r.status).To(Equal(http.StatusCreated), "bootstrap: %v", r.body)
	e.adminCookie = sessionFrom(g, r)
	e.admin, err = svc.Principal(context.Background(), r.body["principalId"].(string))
	g.Expect(err).NotTo(HaveOccurred())
	e.ws, err = svc.Workspace(context.Background(), r.body["workspace"].(string))
	g.Expect(err).NotTo(HaveOccurred())
	return e
}

// do calls the server as the holder of cookie; nil calls anonymously.
func (e *identityEnv) do(cookie *http.Cookie, method, path, body string, headers ...string) response {
	e.t.Helper()
	if cookie != nil {
		headers = append(headers, withCookie(cookie)...)
	}
	return call(e.t, e.server, method, path, body, headers...)
}

// signIn signs in with a local account and returns its session cookie.
func (e *identityEnv) signIn(username, password string) *http.Cookie {
	e.t.Helper()
	g := NewWithT(e.t)
	r := call(e.t, e.server, http.MethodPost, "/api/auth/local/login", fmt.Sprintf(`{"username":%q,"password":%q}`, username, password))
	g.ExpectWithOffset(1, r.status).To(Equal(http.StatusOK), "sign-in of %s: %v", username, r.body)
	return sessionFrom(g, r)
}

// account creates a local account with a role in ws through the service, as the administrator.
func (e *identityEnv) account(username string, ws identity.Workspace, role identity.Role) identity.Account {
	e.t.Helper()
	acct, _, err := e.svc.CreateLocalAccountWithAccess(context.Background(), e.admin.ID,
		identity.NewLocalAccount{Username: username, Password: adminPassword}, identity.InitialAccess{Workspace: ws.ID, Role: role})
	if err != nil {
		e.t.Fatalf("create account: %v", err)
	}
	return acct
}

// workspace creates another workspace of the bootstrap's Tenant, with its namespace.
func (e *identityEnv) workspace(prefix string) identity.Workspace {
	e.t.Helper()
	ws, err := e.svc.CreateWorkspace(context.Background(), e.ws.TenantID, uniqueWorkspace(prefix), "")
	if err != nil {
		e.t.Fatal(err)
	}
	if err := httpapi.NamespaceProvisioner(kube)(context.Background(), ws); err != nil {
		e.t.Fatal(err)
	}
	return ws
}

func (e *identityEnv) auditActions() []string {
	e.t.Helper()
	events, err := e.svc.LatestAuditEvents(context.Background(), 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var actions []string
	for _, ev := range events {
		actions = append(actions, ev.Action)
	}
	return actions
}
