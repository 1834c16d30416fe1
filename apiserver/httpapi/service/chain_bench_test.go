package service_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
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
