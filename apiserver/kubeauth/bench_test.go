package kubeauth_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"platform.dev/platform/apiserver/controlplane"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/kubeauth"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/testenv"
)

// BenchmarkKubeGetAgent measures one GET of an Agent on the kube API as the administrator (client
// certificate, no identity lookups) and with a personal access token (the token, the Principal's
// roles and the workspace read from the SQL store on every request), on SQLite and PostgreSQL.
func BenchmarkKubeGetAgent(b *testing.B) {
	storetest.ForEachDialectBench(b, func(b *testing.B, s *store.Store) {
		ctx := context.Background()
		ids := identity.New(s)
		workspaces := &kubeauth.Authorizer{Identity: ids}
		env, err := testenv.Start(ctx, testenv.Options{Tune: func(o *controlplane.Options) {
			o.Authenticators = append(o.Authenticators, (&kubeauth.Authenticator{Identity: ids}).Request())
			o.Authorizers = append(o.Authorizers, workspaces)
			o.NamespaceVisibility = workspaces.Visibility
		}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = env.Stop() })
		provision := func(ctx context.Context, ws identity.Workspace) error {
			_, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws.RouteName}}, metav1.CreateOptions{})
			return err
		}
		_, admin, home, err := ids.Bootstrap(ctx, identity.BootstrapRequest{Username: "admin", Password: password, TenantName: "Acme", WorkspaceName: "bench"}, provision)
		if err != nil {
			b.Fatal(err)
		}
		viewer, _, err := ids.CreateLocalAccountWithAccess(ctx, admin.ID, identity.NewLocalAccount{Username: "viewer", Password: password},
			identity.InitialAccess{Workspace: home.ID, Role: identity.RoleViewer})
		if err != nil {
			b.Fatal(err)
		}
		_, token, err := ids.CreatePAT(ctx, viewer.PrincipalID, identity.NewPAT{PrincipalID: viewer.PrincipalID, WorkspaceID: home.ID, Name: "bench",
			Permissions: identity.PermissionsOf(identity.PermResourcesRead), ExpiresAt: time.Now().Add(24 * time.Hour)})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := env.Dynamic.Resource(agents).Namespace(home.RouteName).Create(ctx, agent("bench"), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		_, withPAT := as(env, token)
		for name, client := range map[string]dynamic.Interface{"administrator": env.Dynamic, "pat": withPAT} {
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					if _, err := client.Resource(agents).Namespace(home.RouteName).Get(ctx, "bench", metav1.GetOptions{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}
