package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	"platform.dev/platform/apiserver/executor"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/apiserver/workplace"
	"platform.dev/platform/internal/config"
)

// chainOutput is what the benchmark's route answers: small, so that what is measured is the chain
// in front of a handler, not the handler.
type chainOutput struct {
	Body struct {
		Workspace string `json:"workspace"`
	}
}

// chainRoute is a protected route that does nothing but answer its resolved workspace.
func chainRoute(s *httpapi.Server) {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "bench-chain", Method: http.MethodGet, Path: "/api/bench/chain", Tags: []string{"Health"},
	}, httpapi.PolicyRunsRead), func(ctx context.Context, _ *struct{}) (*chainOutput, error) {
		out := &chainOutput{}
		ws, err := s.Workspace(ctx)
		out.Body.Workspace = ws
		return out, err
	})
}

// BenchmarkTheRequestChain: what the service API's chain in front of a Work handler costs per
// request (problem answers, cross-origin check, input check, authentication, authorization, the
// workspace's namespace, the response), served in process without a network, by how the caller
// authenticates: none (the public liveness probe), the Development principal, a personal access
// token and a session cookie of a workspace Member.
func BenchmarkTheRequestChain(b *testing.B) {
	storetest.ForEachDialectBench(b, func(b *testing.B, db *store.Store) {
		ctx := context.Background()
		svc := identity.New(db)
		_, admin, ws, err := svc.Bootstrap(ctx, identity.BootstrapRequest{Username: "bench-admin", Password: adminPassword,
			DisplayName: "Bench", TenantName: "Bench", WorkspaceName: uniqueWorkspace("chain")}, httpapi.NamespaceProvisioner(kube))
		if err != nil {
			b.Fatal(err)
		}
		_, member, err := svc.CreateLocalAccount(ctx, admin.ID, identity.NewLocalAccount{Username: "bench-member", Password: memberPassword})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := svc.SetWorkspaceMembership(ctx, admin.ID, ws.ID, member.ID, identity.RoleMember); err != nil {
			b.Fatal(err)
		}
		_, token, err := svc.CreatePAT(ctx, member.ID, identity.NewPAT{PrincipalID: member.ID, WorkspaceID: ws.ID, Name: "bench",
			Permissions: identity.PermissionsOf(identity.PermRunsRead), ExpiresAt: time.Now().Add(24 * time.Hour)})
		if err != nil {
			b.Fatal(err)
		}
		session, _, err := svc.Login(ctx, "bench-member", memberPassword)
		if err != nil {
			b.Fatal(err)
		}
		reads := benchReads(b)
		handler := func(values map[string]string) http.Handler {
			opts := httpapi.Options{Config: config.FromMap(config.Testing, values), Kube: kube, Reads: reads,
				Ready: func(ctx context.Context) error { return nil }}
			if values == nil {
				opts.Identity, opts.ProvisionWorkspace = svc, httpapi.NamespaceProvisioner(kube)
			}
			api, err := httpapi.New(opts, chainRoute)
			if err != nil {
				b.Fatal(err)
			}
			return api.Handler()
		}
		local, development := handler(nil), handler(map[string]string{"Platform:Authentication:Mode": "Development"})
		for name, tc := range map[string]struct {
			handler      http.Handler
			path, header string
			value        string
		}{
			"public":      {handler: local, path: "/livez"},
			"development": {handler: development, path: "/api/bench/chain", header: httpapi.WorkspaceHeader, value: ws.RouteName},
			"pat":         {handler: local, path: "/api/bench/chain", header: "Authorization", value: "Bearer " + token},
			"session":     {handler: local, path: "/api/bench/chain", header: "Cookie", value: httpapi.SessionCookie + "=" + session.Token},
		} {
			b.Run(name, func(b *testing.B) {
				request := httptest.NewRequest(http.MethodGet, tc.path, nil)
				if tc.header != "" {
					request.Header.Set(tc.header, tc.value)
				}
				serve := func() {
					w := httptest.NewRecorder()
					tc.handler.ServeHTTP(w, request)
					if w.Code != http.StatusOK {
						b.Fatalf("%s: %d %s", tc.path, w.Code, w.Body)
					}
				}
				serve()
				before := db.Counts()
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					serve()
				}
				b.StopTimer()
				b.ReportMetric(float64(db.Counts().Sub(before).Statements)/float64(b.N), "stmt/op")
			})
		}
	})
}

// benchReads answers the namespace reads from informers, as `platform serve` does.
func benchReads(b *testing.B) client.Reader {
	if env.Server() == nil {
		return kube
	}
	informers, err := cache.New(env.Server().LoopbackConfig, cache.Options{Scheme: platformscheme.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = informers.Start(ctx) }()
	b.Cleanup(func() { cancel(); <-stopped })
	if !informers.WaitForCacheSync(ctx) {
		b.Fatal("informers did not sync")
	}
	return informers
}

// BenchmarkWorkItemsWithAToken is BenchmarkWorkItemsEndToEnd from one client as deployments
// run it: the caller authenticates with a personal access token of a workspace Admin (Local
// mode), so that the statements of authentication and authorization (the service API's, and
// the executor's check that the run's Principal still holds runs/execute) count per item.
func BenchmarkWorkItemsWithAToken(b *testing.B) {
	storetest.ForEachDialectBench(b, func(b *testing.B, db *store.Store) {
		ctx := context.Background()
		ids := identity.New(db)
		_, admin, ws, err := ids.Bootstrap(ctx, identity.BootstrapRequest{Username: "bench-admin", Password: adminPassword,
			DisplayName: "Bench", TenantName: "Bench", WorkspaceName: uniqueWorkspace("token")}, httpapi.NamespaceProvisioner(kube))
		if err != nil {
			b.Fatal(err)
		}
		_, member, err := ids.CreateLocalAccount(ctx, admin.ID, identity.NewLocalAccount{Username: "bench-member", Password: memberPassword})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ids.SetWorkspaceMembership(ctx, admin.ID, ws.ID, member.ID, identity.RoleAdmin); err != nil {
			b.Fatal(err)
		}
		_, token, err := ids.CreatePAT(ctx, member.ID, identity.NewPAT{PrincipalID: member.ID, WorkspaceID: ws.ID, Name: "bench",
			Permissions: identity.PermissionsOf(identity.PermResourcesRead, identity.PermResourcesWrite, identity.PermRunsRead, identity.PermRunsExecute),
			ExpiresAt:   time.Now().Add(24 * time.Hour)})
		if err != nil {
			b.Fatal(err)
		}
		server := tokenWorkServer(b, db, ids)
		call := func(method, path, body string) (int, map[string]any) {
			return benchCallWith(b, server, method, path, body, "Bearer "+token)
		}
		flow := fmt.Sprintf("bench-token-%d", benchFlows.Add(1))
		for _, c := range []struct{ path, body string }{
			{"/api/agents", `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"` + flow + `"},"definition":{"instructions":"@respond done"}}`},
			{"/api/flows", directFlowBody(flow, flow, "Bench")},
			{"/api/flows/" + flow + "/versions", `{"version":"1.0.0","activate":true}`},
		} {
			if status, out := call(http.MethodPost, c.path, c.body); status != http.StatusCreated {
				b.Fatalf("%s: %d %v", c.path, status, out)
			}
		}
		rawCommits := rawCommitsNow(b, db)
		body := `{"type":"bench","title":"t","instruction":"i","flowReference":{"name":"` + flow + `"}}`
		b.Run("clients=1", func(b *testing.B) {
			measureClients(b, db, rawCommits, 1, "items/s", func() bool {
				status, out := call(http.MethodPost, "/api/work/workitems?waitSeconds=30", body)
				if status != http.StatusAccepted || field(out, "flowRun", "state") != "Completed" {
					b.Errorf("submit: %d %v", status, out)
					return false
				}
				return true
			})
		})
	})
}

// tokenWorkServer is benchServer in Local mode with the identity store: callers authenticate,
// and the executor checks each run's Principal against the store.
func tokenWorkServer(b *testing.B, s *store.Store, ids *identity.Service) *httptest.Server {
	cfg := config.FromMap(config.Testing, nil)
	store := work.New(s)
	places := workplace.NewStore(s, store, workplace.FileArtifacts{Dir: filepath.Join(b.TempDir(), "artifacts")})
	store.Observer = places
	authorize, err := httpapi.RunAuthorizer(cfg, ids)
	if err != nil {
		b.Fatal(err)
	}
	reads := benchReads(b)
	exec, err := executor.New(executor.Options{Work: store, Resolver: executor.KubeResolver{Client: reads},
		Provider: provider.DeterministicProvider{}, Authorize: authorize, Poll: 20 * time.Millisecond, Artifacts: places.Blobs})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); exec.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	api, err := service.New(httpapi.Options{Config: cfg, Kube: kube, PlatformKube: platformKube, Reads: reads, Work: store, Workplace: places,
		Executor: exec, Identity: ids, ProvisionWorkspace: httpapi.NamespaceProvisioner(kube),
		Ready: func(ctx context.Context) error { return env.Server().Ready(ctx) }})
	if err != nil {
		b.Fatal(err)
	}
	server := httptest.NewServer(api.Handler())
	b.Cleanup(server.Close)
	return server
}

// benchCallWith is benchCall with an Authorization header.
func benchCallWith(b testing.TB, server *httptest.Server, method, path, body, authorization string) (int, map[string]any) {
	req, err := http.NewRequest(method, server.URL+path, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", authorization)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out)
	return resp.StatusCode, out
}
