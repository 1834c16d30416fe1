package identity_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

func TestTheFinalEffectiveOwnerCannotBeDemotedOrRemoved(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		a := bootstrapped(t, s)
		owner := a.account(t, "Owner", a.ws, identity.RoleOwner)

		_, err := a.svc.SetWorkspaceMembership(ctx, a.admin.ID, a.ws.ID, owner.PrincipalID, identity.RoleAdmin)
		g.Expect(err).To(MatchError(identity.ErrLastOwner))
		g.Expect(a.svc.RemoveWorkspaceMembership(ctx, a.admin.ID, a.ws.ID, owner.PrincipalID)).To(MatchError(identity.ErrLastOwner))
		g.Expect(a.svc.RemoveWorkspaceMembership(ctx, owner.PrincipalID, a.ws.ID, owner.PrincipalID)).To(MatchError(identity.ErrLastOwner), "not even by itself")

		// A disabled Owner is no effective Owner.
		dormant := a.account(t, "Dormant", a.ws, identity.RoleOwner)
		_, err = a.svc.SetLocalAccountStatus(ctx, a.admin.ID, dormant.AccountID, identity.StatusDisabled)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(a.svc.RemoveWorkspaceMembership(ctx, a.admin.ID, a.ws.ID, owner.PrincipalID)).To(MatchError(identity.ErrLastOwner))

		// A tenant-scoped Owner counts: the workspace keeps an effective Owner.
		tenantOwner := a.account(t, "TenantOwner", a.ws, identity.RoleViewer)
		_, err = s.DB().Exec(s.Rebind(`INSERT INTO memberships (principal_id, scope_kind, scope_id, role, created_at) VALUES (?, 'tenant', ?, 'Owner', ?)`),
			tenantOwner.PrincipalID, a.ws.TenantID, time.Now().UTC())
		g.Expect(err).NotTo(HaveOccurred())
		demoted, err := a.svc.SetWorkspaceMembership(ctx, a.admin.ID, a.ws.ID, owner.PrincipalID, identity.RoleAdmin)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(demoted.Role).To(Equal(identity.RoleAdmin))
		ms, err := a.svc.WorkspaceMemberships(ctx, a.ws.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ms).To(ContainElement(And(HaveField("Principal.ID", tenantOwner.PrincipalID), HaveField("ScopeKind", identity.ScopeTenant),
			HaveField("Role", identity.RoleOwner))), "inherited roles are listed with their scope")

		// The workspace-scoped role of a tenant-scoped Owner can go: it stays an Owner.
		_, err = a.svc.SetWorkspaceMembership(ctx, a.admin.ID, a.ws.ID, tenantOwner.PrincipalID, identity.RoleOwner)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(a.svc.RemoveWorkspaceMembership(ctx, a.admin.ID, a.ws.ID, tenantOwner.PrincipalID)).To(Succeed())
	})
}

func TestSettingAMembershipCreatesTheMissingTenantMembershipWhichGrantsNothing(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		a := bootstrapped(t, s)
		other, err := a.svc.CreateWorkspace(ctx, a.ws.TenantID, "other", "")
		g.Expect(err).NotTo(HaveOccurred())
		_, p, err := a.svc.CreateLocalAccount(ctx, a.admin.ID, identity.NewLocalAccount{Username: "Newcomer", Password: password})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(count(t, s, `SELECT COUNT(*) FROM tenant_members WHERE principal_id = ?`, p.ID)).To(BeZero())

		m, err := a.svc.SetWorkspaceMembership(ctx, a.admin.ID, a.ws.ID, p.ID, identity.RoleMember)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(m.ScopeKind).To(Equal(identity.ScopeWorkspace))
		g.Expect(count(t, s, `SELECT COUNT(*) FROM tenant_members WHERE tenant_id = ? AND principal_id = ?`, a.ws.TenantID, p.ID)).To(Equal(1))

		_, err = a.svc.Access(ctx, p.ID, other.ID)
		g.Expect(err).To(MatchError(identity.ErrWorkspaceNotFound), "a Tenant membership opens no other workspace")
		members, err := a.svc.OrganizationMembers(ctx, a.ws.TenantID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(members).To(ContainElement(And(HaveField("Principal.ID", p.ID), HaveField("Roles", ConsistOf(HaveField("Role", identity.RoleMember))))))

		// Removing the workspace role keeps the Tenant membership.
		g.Expect(a.svc.RemoveWorkspaceMembership(ctx, a.admin.ID, a.ws.ID, p.ID)).To(Succeed())
		g.Expect(count(t, s, `SELECT COUNT(*) FROM tenant_members WHERE tenant_id = ? AND principal_id = ?`, a.ws.TenantID, p.ID)).To(Equal(1))
		g.Expect(a.svc.RemoveWorkspaceMembership(ctx, a.admin.ID, a.ws.ID, p.ID)).To(MatchError(identity.ErrMembershipNotFound))
		_, err = a.svc.SetWorkspaceMembership(ctx, a.admin.ID, a.ws.ID, "no-such-principal", identity.RoleMember)
		g.Expect(err).To(MatchError(identity.ErrPrincipalNotFound))
	})
}

func TestNoOneSetsChangesOrRemovesARoleAboveTheirOwn(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		a := bootstrapped(t, s)
		owner := a.account(t, "Owner", a.ws, identity.RoleOwner)
		admin := a.account(t, "Admin", a.ws, identity.RoleAdmin)
		viewer := a.account(t, "Viewer", a.ws, identity.RoleViewer)

		_, err := a.svc.SetWorkspaceMembership(ctx, admin.PrincipalID, a.ws.ID, viewer.PrincipalID, identity.RoleOwner)
		g.Expect(err).To(MatchError(identity.ErrRoleAboveCaller), "an Admin cannot make an Owner")
		_, err = a.svc.SetWorkspaceMembership(ctx, admin.PrincipalID, a.ws.ID, admin.PrincipalID, identity.RoleOwner)
		g.Expect(err).To(MatchError(identity.ErrRoleAboveCaller), "nor make itself one")
		g.Expect(a.svc.RemoveWorkspaceMembership(ctx, admin.PrincipalID, a.ws.ID, owner.PrincipalID)).To(MatchError(identity.ErrRoleAboveCaller))
		_, err = a.svc.SetWorkspaceMembership(ctx, admin.PrincipalID, a.ws.ID, viewer.PrincipalID, identity.RoleAdmin)
		g.Expect(err).NotTo(HaveOccurred(), "an Admin may make an Admin")
		_, err = a.svc.SetWorkspaceMembership(ctx, owner.PrincipalID, a.ws.ID, viewer.PrincipalID, identity.RoleOwner)
		g.Expect(err).NotTo(HaveOccurred(), "an Owner may make an Owner")
	})
}

func TestMembershipChangesAreAuditedWithTheirScope(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		a := bootstrapped(t, s)
		_, p, err := a.svc.CreateLocalAccount(ctx, a.admin.ID, identity.NewLocalAccount{Username: "Audited", Password: password})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = a.svc.SetWorkspaceMembership(ctx, a.admin.ID, a.ws.ID, p.ID, identity.RoleViewer)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = a.svc.SetWorkspaceMembership(ctx, a.admin.ID, a.ws.ID, p.ID, identity.RoleViewer)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(a.svc.RemoveWorkspaceMembership(ctx, a.admin.ID, a.ws.ID, p.ID)).To(Succeed())

		events, err := a.svc.LatestAuditEvents(ctx, 2)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(events).To(HaveExactElements(
			And(HaveField("Action", "workspace-membership.removed"), HaveField("ActorID", a.admin.ID), HaveField("TargetID", p.ID),
				HaveField("TenantID", a.ws.TenantID), HaveField("WorkspaceID", a.ws.ID)),
			And(HaveField("Action", "workspace-membership.set"), HaveField("TargetID", p.ID), HaveField("WorkspaceID", a.ws.ID)),
		), "setting the same role again records nothing")
	})
}

func TestCreatingAWorkspaceMakesTheCreatorOwnerUnlessAPlatformAdministrator(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		a := bootstrapped(t, s)
		creator := a.account(t, "Creator", a.ws, identity.RoleAdmin)
		var provisioned []string
		provision := func(_ context.Context, ws identity.Workspace) error {
			provisioned = append(provisioned, ws.RouteName)
			return nil
		}

		ws, err := a.svc.CreateWorkspaceFor(ctx, creator.PrincipalID, identity.NewWorkspace{TenantID: a.ws.TenantID, RouteName: "made"}, provision)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(provisioned).To(Equal([]string{"made"}))
		g.Expect(ws.DisplayName).To(Equal("made"))
		access, err := a.svc.Access(ctx, creator.PrincipalID, ws.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(access.Permissions).To(Equal(identity.AllPermissions), "the creator is Owner")

		byAdmin, err := a.svc.CreateWorkspaceFor(ctx, a.admin.ID, identity.NewWorkspace{TenantID: a.ws.TenantID, RouteName: "by-admin"}, provision)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(count(t, s, `SELECT COUNT(*) FROM memberships WHERE scope_id = ?`, byAdmin.ID)).To(BeZero(), "a Platform administrator gets no membership")

		_, err = a.svc.CreateWorkspaceFor(ctx, creator.PrincipalID, identity.NewWorkspace{TenantID: a.ws.TenantID, RouteName: "made"}, provision)
		g.Expect(err).To(MatchError(identity.ErrWorkspaceNameTaken))

		boom := errors.New("namespace refused")
		_, err = a.svc.CreateWorkspaceFor(ctx, creator.PrincipalID, identity.NewWorkspace{TenantID: a.ws.TenantID, RouteName: "refused"},
			func(context.Context, identity.Workspace) error { return boom })
		g.Expect(err).To(MatchError(identity.ErrProvisioningFailed))
		g.Expect(err).To(MatchError(boom))
		g.Expect(count(t, s, `SELECT COUNT(*) FROM workspaces WHERE route_name = 'refused'`)).To(BeZero(), "compensated")
		events, err := a.svc.LatestAuditEvents(ctx, 1)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(events[0]).To(And(HaveField("Action", "workspace-membership.removed"), HaveField("ReasonCode", "provisioning-failed")))
	})
}

func TestOnlyReadableWorkspacesAreListedAndAllForAPlatformAdministrator(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		a := bootstrapped(t, s)
		other, err := a.svc.CreateWorkspace(ctx, a.ws.TenantID, "other", "")
		g.Expect(err).NotTo(HaveOccurred())
		m := a.account(t, "Member", other, identity.RoleMember)

		mine, err := a.svc.ReadableWorkspaces(ctx, m.PrincipalID, "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(mine).To(ConsistOf(HaveField("ID", other.ID)))
		all, err := a.svc.ReadableWorkspaces(ctx, a.admin.ID, "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(all).To(ConsistOf(HaveField("ID", a.ws.ID), HaveField("ID", other.ID)))
	})
}

func TestPreferencesDefaultToTheSystemThemeAndBelongToOnePrincipal(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		a := bootstrapped(t, s)
		other := a.account(t, "Other", a.ws, identity.RoleViewer)

		p, err := a.svc.Preferences(ctx, a.admin.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Theme).To(Equal(identity.ThemeSystem))
		g.Expect(p.UpdatedAt.IsZero()).To(BeTrue())

		saved, err := a.svc.SetPreferences(ctx, a.admin.ID, identity.ThemeDark)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(saved.UpdatedAt.IsZero()).To(BeFalse())
		p, err = a.svc.Preferences(ctx, a.admin.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Theme).To(Equal(identity.ThemeDark))
		_, err = a.svc.SetPreferences(ctx, a.admin.ID, identity.ThemeLight)
		g.Expect(err).NotTo(HaveOccurred())
		p, _ = a.svc.Preferences(ctx, a.admin.ID)
		g.Expect(p.Theme).To(Equal(identity.ThemeLight), "replaced")

		p, err = a.svc.Preferences(ctx, other.PrincipalID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Theme).To(Equal(identity.ThemeSystem), "another Principal's are its own")
		_, err = a.svc.SetPreferences(ctx, a.admin.ID, "Sepia")
		g.Expect(err).To(MatchError(identity.ErrInvalidTheme))
		_, err = a.svc.Preferences(ctx, "no-such-principal")
		g.Expect(err).To(MatchError(identity.ErrPrincipalNotFound))
	})
}
