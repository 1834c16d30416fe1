package identity_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// administered is an initialized identity store: the bootstrap's administrator and workspace.
type administered struct {
	svc   *identity.Service
	admin identity.Principal
	ws    identity.Workspace
}

func bootstrapped(t *testing.T, s *store.Store) administered {
	t.Helper()
	svc, _ := newService(s)
	_, admin, ws, err := svc.Bootstrap(context.Background(), bootstrapRequest(), noProvision)
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	return administered{svc: svc, admin: admin, ws: ws}
}

// account creates an account with a role in ws, as the bootstrap's administrator.
func (a administered) account(t *testing.T, name string, ws identity.Workspace, role identity.Role) identity.Account {
	t.Helper()
	acct, _, err := a.svc.CreateLocalAccountWithAccess(context.Background(), a.admin.ID,
		identity.NewLocalAccount{Username: name, Password: password, Email: strings.ToLower(name) + "@example.test"},
		identity.InitialAccess{Workspace: ws.ID, Role: role})
	if err != nil {
		t.Fatalf("create account %s: %v", name, err)
	}
	return acct
}

// administrator creates an account and grants it the Platform administrator grant.
func (a administered) administrator(t *testing.T, name string) identity.Account {
	t.Helper()
	acct := a.account(t, name, a.ws, identity.RoleViewer)
	if _, _, err := a.svc.GrantPlatformAdministrator(context.Background(), a.admin.ID, acct.PrincipalID); err != nil {
		t.Fatalf("grant %s: %v", name, err)
	}
	return acct
}

func (a administered) adminAccount(t *testing.T) identity.LocalAccount {
	t.Helper()
	acct, err := a.svc.LocalAccountOf(context.Background(), a.admin.ID)
	if err != nil {
		t.Fatal(err)
	}
	return acct
}

func count(t *testing.T, s *store.Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRow(s.Rebind(query), args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCreatingAnAccountGivesItsInitialAccessInOneAuditedStep(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		a := bootstrapped(t, s)

		acct, ws, err := a.svc.CreateLocalAccountWithAccess(ctx, a.admin.ID,
			identity.NewLocalAccount{Username: "Grace", Password: password, DisplayName: "Grace H.", Email: "grace@example.test"},
			identity.InitialAccess{Workspace: a.ws.RouteName, Role: identity.RoleMember})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ws.ID).To(Equal(a.ws.ID), "the workspace is selected by route name too")
		g.Expect(acct.Principal.Kind).To(Equal(identity.KindHuman))
		g.Expect(acct.Principal.Status).To(Equal(identity.StatusActive))

		linked, err := a.svc.LocalAccountOf(ctx, acct.PrincipalID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(linked.AccountID).To(Equal(acct.AccountID), "the local link")
		g.Expect(count(t, s, `SELECT COUNT(*) FROM tenant_members WHERE tenant_id = ? AND principal_id = ?`, ws.TenantID, acct.PrincipalID)).To(Equal(1))
		access, err := a.svc.Access(ctx, acct.PrincipalID, ws.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(access.Permissions).To(Equal(identity.RoleMember.Permissions()))

		events, err := a.svc.LatestAuditEvents(ctx, 2)
		g.Expect(err).NotTo(HaveOccurred())
		for _, e := range events {
			g.Expect(e.ActorID).To(Equal(a.admin.ID))
			g.Expect(e.TargetID).To(Equal(acct.PrincipalID))
			g.Expect(e.TenantID).To(Equal(ws.TenantID))
			g.Expect(e.WorkspaceID).To(Equal(ws.ID))
		}
		g.Expect([]string{events[1].Action, events[0].Action}).To(Equal([]string{"local-account.created", "workspace-membership.set"}))

		// An unknown workspace or role creates nothing.
		before := count(t, s, `SELECT COUNT(*) FROM principals`)
		_, _, err = a.svc.CreateLocalAccountWithAccess(ctx, a.admin.ID, identity.NewLocalAccount{Username: "Nobody", Password: password},
			identity.InitialAccess{Workspace: "elsewhere", Role: identity.RoleMember})
		g.Expect(err).To(MatchError(identity.ErrWorkspaceNotFound))
		_, _, err = a.svc.CreateLocalAccountWithAccess(ctx, a.admin.ID, identity.NewLocalAccount{Username: "Nobody", Password: password},
			identity.InitialAccess{Workspace: a.ws.ID, Role: "Superuser"})
		g.Expect(err).To(MatchError(identity.ErrUnknownRole))
		g.Expect(count(t, s, `SELECT COUNT(*) FROM principals`)).To(Equal(before))
	})
}

func TestAPlatformAdministratorCannotRevokeItsOwnGrant(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		a := bootstrapped(t, s)
		a.administrator(t, "Successor")
		g.Expect(a.svc.RevokePlatformAdministrator(context.Background(), a.admin.ID, a.admin.ID)).To(MatchError(identity.ErrSelfRevocation))
		g.Expect(a.svc.IsPlatformAdministrator(context.Background(), a.admin.ID)).To(BeTrue())
	})
}

func TestAPlatformAdministratorCannotDisableItsOwnAccount(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		a := bootstrapped(t, s)
		a.administrator(t, "Successor")
		_, err := a.svc.SetLocalAccountStatus(context.Background(), a.admin.ID, a.adminAccount(t).AccountID, identity.StatusDisabled)
		g.Expect(err).To(MatchError(identity.ErrSelfDisable))
		g.Expect(a.svc.IsPlatformAdministrator(context.Background(), a.admin.ID)).To(BeTrue())
	})
}

// An administrator whose request was authorized before another administrator took its grant or
// account away must not remove the last active administrator.
func TestTheLastActiveAdministratorCannotBeRevokedOrDisabled(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		a := bootstrapped(t, s)
		b := a.administrator(t, "Second")

		g.Expect(a.svc.RevokePlatformAdministrator(ctx, a.admin.ID, b.PrincipalID)).To(Succeed())
		g.Expect(a.svc.RevokePlatformAdministrator(ctx, b.PrincipalID, a.admin.ID)).To(MatchError(identity.ErrLastAdministrator))
		_, err := a.svc.SetLocalAccountStatus(ctx, b.PrincipalID, a.adminAccount(t).AccountID, identity.StatusDisabled)
		g.Expect(err).To(MatchError(identity.ErrLastAdministrator))

		// The same with B's account disabled instead of its grant revoked.
		c := a.administrator(t, "Third")
		_, err = a.svc.SetLocalAccountStatus(ctx, a.admin.ID, c.AccountID, identity.StatusDisabled)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = a.svc.SetLocalAccountStatus(ctx, c.PrincipalID, a.adminAccount(t).AccountID, identity.StatusDisabled)
		g.Expect(err).To(MatchError(identity.ErrLastAdministrator))
		g.Expect(a.svc.RevokePlatformAdministrator(ctx, c.PrincipalID, a.admin.ID)).To(MatchError(identity.ErrLastAdministrator))
		g.Expect(a.svc.IsPlatformAdministrator(ctx, a.admin.ID)).To(BeTrue())

		// A request whose actor lost its grant cannot act on anyone else either.
		d := a.account(t, "Fourth", a.ws, identity.RoleViewer)
		_, _, err = a.svc.GrantPlatformAdministrator(ctx, b.PrincipalID, d.PrincipalID)
		g.Expect(err).To(MatchError(identity.ErrNotPlatformAdministrator))
	})
}

func TestGrantingADisabledPrincipalIsRejected(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		a := bootstrapped(t, s)
		target := a.account(t, "Dormant", a.ws, identity.RoleViewer)
		_, err := a.svc.SetLocalAccountStatus(ctx, a.admin.ID, target.AccountID, identity.StatusDisabled)
		g.Expect(err).NotTo(HaveOccurred())
		_, _, err = a.svc.GrantPlatformAdministrator(ctx, a.admin.ID, target.PrincipalID)
		g.Expect(err).To(MatchError(identity.ErrPrincipalDisabled))
		_, _, err = a.svc.GrantPlatformAdministrator(ctx, a.admin.ID, "no-such-principal")
		g.Expect(err).To(MatchError(identity.ErrPrincipalNotFound))
		g.Expect(count(t, s, `SELECT COUNT(*) FROM platform_administrators`)).To(Equal(1))
	})
}

func TestDisablingKeepsTheGrantAndEnablingRestoresIt(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		a := bootstrapped(t, s)
		b := a.administrator(t, "Second")

		disabled, err := a.svc.SetLocalAccountStatus(ctx, a.admin.ID, b.AccountID, identity.StatusDisabled)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(disabled.Principal.Status).To(Equal(identity.StatusDisabled))
		g.Expect(disabled.PlatformAdministrator).To(BeTrue(), "the grant is kept")
		g.Expect(a.svc.IsPlatformAdministrator(ctx, b.PrincipalID)).To(BeFalse(), "a disabled Principal administers nothing")
		grants, err := a.svc.PlatformAdministrators(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(grants).To(ContainElement(And(
			HaveField("Principal.ID", b.PrincipalID), HaveField("Principal.Status", identity.StatusDisabled), HaveField("GrantedBy", a.admin.ID))))
		_, _, err = a.svc.Login(ctx, "Second", password)
		g.Expect(err).To(MatchError(identity.ErrAccountDisabled))

		enabled, err := a.svc.SetLocalAccountStatus(ctx, a.admin.ID, b.AccountID, identity.StatusActive)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(enabled.Principal.Status).To(Equal(identity.StatusActive))
		g.Expect(a.svc.IsPlatformAdministrator(ctx, b.PrincipalID)).To(BeTrue(), "re-enabling restores the grant")

		// Enabling an enabled account changes and audits nothing.
		before, _ := a.svc.LatestAuditEvents(ctx, 0)
		_, err = a.svc.SetLocalAccountStatus(ctx, a.admin.ID, b.AccountID, identity.StatusActive)
		g.Expect(err).NotTo(HaveOccurred())
		after, _ := a.svc.LatestAuditEvents(ctx, 0)
		g.Expect(after).To(HaveLen(len(before)))

		// Unless separately revoked: a revoked grant stays revoked across disable and enable.
		g.Expect(a.svc.RevokePlatformAdministrator(ctx, a.admin.ID, b.PrincipalID)).To(Succeed())
		_, err = a.svc.SetLocalAccountStatus(ctx, a.admin.ID, b.AccountID, identity.StatusDisabled)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = a.svc.SetLocalAccountStatus(ctx, a.admin.ID, b.AccountID, identity.StatusActive)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(a.svc.IsPlatformAdministrator(ctx, b.PrincipalID)).To(BeFalse())
	})
}

// Two processes on one database (two Services, so two in-process mutexes) where two
// administrators revoke each other, or disable each other, at the same moment: the database lock
// lets exactly one through, and an active administrator remains.
func TestConcurrentAdministrationAcrossProcessesKeepsAnActiveAdministrator(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for round := range 4 {
			g := NewWithT(t)
			a := bootstrappedRound(t, s, round)
			b := a.administrator(t, "Peer"+string(rune('A'+round)))
			other := identity.New(s)
			adminAccount := a.adminAccount(t)

			var (
				wg   sync.WaitGroup
				errs = make([]error, 2)
			)
			start := make(chan struct{})
			if round%2 == 0 {
				wg.Go(func() { <-start; errs[0] = a.svc.RevokePlatformAdministrator(ctx, a.admin.ID, b.PrincipalID) })
				wg.Go(func() { <-start; errs[1] = other.RevokePlatformAdministrator(ctx, b.PrincipalID, a.admin.ID) })
			} else {
				wg.Go(func() {
					<-start
					_, errs[0] = a.svc.SetLocalAccountStatus(ctx, a.admin.ID, b.AccountID, identity.StatusDisabled)
				})
				wg.Go(func() {
					<-start
					_, errs[1] = other.SetLocalAccountStatus(ctx, b.PrincipalID, adminAccount.AccountID, identity.StatusDisabled)
				})
			}
			close(start)
			wg.Wait()
			succeeded := 0
			for _, err := range errs {
				if err == nil {
					succeeded++
				} else {
					g.Expect(errors.Is(err, identity.ErrLastAdministrator)).To(BeTrue(), "round %d: %v", round, err)
				}
			}
			g.Expect(succeeded).To(Equal(1), "round %d", round)
			g.Expect(count(t, s, `SELECT COUNT(*) FROM platform_administrators g JOIN principals p ON p.id = g.principal_id WHERE p.status = 'Active'`)).
				To(Equal(1), "round %d", round)
			resetIdentity(t, s)
		}
	})
}

// bootstrappedRound bootstraps an emptied store again, with a workspace name of its own.
func bootstrappedRound(t *testing.T, s *store.Store, round int) administered {
	t.Helper()
	svc, _ := newService(s)
	req := bootstrapRequest()
	req.Username = req.Username + string(rune('a'+round))
	req.WorkspaceName = req.WorkspaceName + "-" + string(rune('a'+round))
	_, admin, ws, err := svc.Bootstrap(context.Background(), req, noProvision)
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	return administered{svc: svc, admin: admin, ws: ws}
}

// resetIdentity uninitializes the store (the audit log stays: it is append-only).
func resetIdentity(t *testing.T, s *store.Store) {
	t.Helper()
	for _, table := range []string{"principal_preferences", "principal_default_contexts", "tenant_members", "memberships",
		"platform_administrators", "sessions", "local_accounts", "identity_bootstrap", "workspaces", "tenants", "principals"} {
		if _, err := s.DB().Exec(`DELETE FROM ` + table); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBootstrapDeclaresTheDefaultContextThatAPlatformAdministratorPrefers(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		a := bootstrapped(t, s)
		g.Expect(count(t, s, `SELECT COUNT(*) FROM principal_default_contexts WHERE principal_id = ? AND tenant_id = ? AND workspace_id = ?`,
			a.admin.ID, a.ws.TenantID, a.ws.ID)).To(Equal(1))

		// A membership elsewhere does not move the administrator away from its declared context.
		older, err := a.svc.CreateWorkspace(ctx, a.ws.TenantID, "older", "")
		g.Expect(err).NotTo(HaveOccurred())
		_, err = s.DB().Exec(s.Rebind(`UPDATE workspaces SET created_at = ? WHERE id = ?`), a.ws.CreatedAt.Add(-1e9), older.ID)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = a.svc.SetWorkspaceMembership(ctx, a.admin.ID, older.ID, a.admin.ID, identity.RoleViewer)
		g.Expect(err).NotTo(HaveOccurred())
		def, err := a.svc.DefaultWorkspace(ctx, a.admin.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(def.ID).To(Equal(a.ws.ID))

		// A member acts in its first membership, whatever the administrator declared.
		m := a.account(t, "Member", older, identity.RoleMember)
		_, err = a.svc.SetWorkspaceMembership(ctx, a.admin.ID, a.ws.ID, m.PrincipalID, identity.RoleMember)
		g.Expect(err).NotTo(HaveOccurred())
		def, err = a.svc.DefaultWorkspace(ctx, m.PrincipalID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(def.ID).To(Equal(older.ID))

		// When the declared workspace is not active, the first available is used.
		_, err = s.DB().Exec(s.Rebind(`UPDATE workspaces SET status = 'Disabled' WHERE id = ?`), a.ws.ID)
		g.Expect(err).NotTo(HaveOccurred())
		def, err = a.svc.DefaultWorkspace(ctx, a.admin.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(def.ID).To(Equal(older.ID))
	})
}
