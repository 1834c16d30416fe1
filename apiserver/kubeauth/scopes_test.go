package kubeauth_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"platform.dev/platform/apis/platform/ownerscope"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/kubeauth"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// The namespaces of the instance and of tenants hold their Secrets and Vaults: Platform
// administrators reach them (never through a personal access token), nobody else does, and they
// hold nothing else.
func TestScopeNamespacesAreForPlatformAdministratorsOnly(t *testing.T) {
	type request struct {
		group, resource, verb, namespace, name string
	}
	tests := map[string]struct {
		who     string // admin, admin-pat, member
		request request
		want    authorizer.Decision
	}{
		"an administrator reads the instance's Secrets":        {who: "admin", request: request{"platform.dev", "secrets", "list", ownerscope.InstanceNamespace, ""}, want: authorizer.DecisionAllow},
		"an administrator writes a tenant's Vaults":            {who: "admin", request: request{"platform.dev", "vaults", "create", "tenant", ""}, want: authorizer.DecisionAllow},
		"an administrator deletes the instance's Secrets":      {who: "admin", request: request{"platform.dev", "secrets", "delete", ownerscope.InstanceNamespace, "x"}, want: authorizer.DecisionAllow},
		"an administrator reads the scope namespace itself":    {who: "admin", request: request{"", "namespaces", "get", "", ownerscope.InstanceNamespace}, want: authorizer.DecisionAllow},
		"an administrator reads the Events that explain them":  {who: "admin", request: request{"events.k8s.io", "events", "list", ownerscope.InstanceNamespace, ""}, want: authorizer.DecisionAllow},
		"an administrator may not put Agents there":            {who: "admin", request: request{"platform.dev", "agents", "create", ownerscope.InstanceNamespace, ""}, want: authorizer.DecisionDeny},
		"an administrator may not delete the scope namespace":  {who: "admin", request: request{"", "namespaces", "delete", "", ownerscope.InstanceNamespace}, want: authorizer.DecisionDeny},
		"an administrator's personal access token cannot":      {who: "admin-pat", request: request{"platform.dev", "secrets", "list", ownerscope.InstanceNamespace, ""}, want: authorizer.DecisionDeny},
		"a workspace Owner cannot read the instance's Secrets": {who: "member", request: request{"platform.dev", "secrets", "get", ownerscope.InstanceNamespace, "x"}, want: authorizer.DecisionDeny},
		"a tenant member cannot read the tenant's Secrets":     {who: "member", request: request{"platform.dev", "secrets", "list", "tenant", ""}, want: authorizer.DecisionDeny},
		"a tenant member cannot see the tenant's namespace":    {who: "member", request: request{"", "namespaces", "get", "", "tenant"}, want: authorizer.DecisionDeny},
		"a not-yet-made tenant namespace is just as reserved":  {who: "member", request: request{"platform.dev", "vaults", "list", ownerscope.TenantNamespacePrefix + "future", ""}, want: authorizer.DecisionDeny},
	}
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ids := identity.New(s)
		z := &kubeauth.Authorizer{Identity: ids}
		_, admin, home, err := ids.Bootstrap(ctx, identity.BootstrapRequest{Username: "admin", Password: password, TenantName: "Acme", WorkspaceName: "home"}, noProvision)
		if err != nil {
			t.Fatal(err)
		}
		owner, _, err := ids.CreateLocalAccountWithAccess(ctx, admin.ID, identity.NewLocalAccount{Username: "owner", Password: password},
			identity.InitialAccess{Workspace: home.ID, Role: identity.RoleOwner})
		if err != nil {
			t.Fatal(err)
		}
		tenantNamespace, err := ownerscope.TenantNamespace(home.TenantID)
		if err != nil {
			t.Fatal(err)
		}
		users := map[string]user.Info{
			"admin":     principal(admin.ID, nil),
			"admin-pat": principal(admin.ID, map[string][]string{kubeauth.ExtraCredential: {kubeauth.CredentialPAT}, kubeauth.ExtraPATWorkspaceID: {home.ID}, kubeauth.ExtraPATPermissions: {"workspaces/read", "resources/read", "resources/write"}}),
			"member":    principal(owner.PrincipalID, nil),
		}
		for name, tt := range tests {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				r := tt.request
				if r.namespace == "tenant" {
					r.namespace = tenantNamespace
				}
				if r.name == "tenant" {
					r.name = tenantNamespace
				}
				decision, reason, err := z.Authorize(ctx, authorizer.AttributesRecord{
					User: users[tt.who], Verb: r.verb, APIGroup: r.group, APIVersion: "v1", Resource: r.resource,
					Namespace: r.namespace, Name: r.name, ResourceRequest: true,
				})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(decision).To(Equal(tt.want), reason)
			})
		}

		t.Run("namespace lists show scope namespaces to administrators only", func(t *testing.T) {
			g := NewWithT(t)
			for who, want := range map[string]bool{"admin": true, "admin-pat": false, "member": false} {
				visible, err := z.Visibility(ctx, users[who])
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(visible(ownerscope.InstanceNamespace)).To(Equal(want), who)
				g.Expect(visible(tenantNamespace)).To(Equal(want), who)
				g.Expect(visible(home.RouteName)).To(BeTrue(), who)
			}
		})
	})
}

func principal(id string, extra map[string][]string) user.Info {
	all := map[string][]string{kubeauth.ExtraPrincipalID: {id}, kubeauth.ExtraCredential: {kubeauth.CredentialBearer}}
	for k, v := range extra {
		all[k] = v
	}
	return &user.DefaultInfo{Name: kubeauth.UserPrefix + id, UID: id, Extra: all}
}

func noProvision(context.Context, identity.Workspace) error { return nil }
