package identity_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// A caller resolved once is kept in memory (a request then reads one counter instead of nine
// rows), and every change to what resolved it applies to the very next request: through this
// Service, through another replica's Service on the same database, or by hand in SQL.
func TestAChangeToACallerAppliesToTheNextRequest(t *testing.T) {
	cases := map[string]struct {
		// change is made after the caller was resolved (twice, so that it is cached).
		change func(t *testing.T, f patFixture, replica *identity.Service, tokenID string)
		// tokenRefused and sessionRefused: they no longer authenticate; want are the member's
		// permissions in the workspace now, none when it is no longer the member's.
		tokenRefused, sessionRefused bool
		want                         identity.Permissions
	}{
		"a revoked token is refused at once": {
			change: func(t *testing.T, f patFixture, _ *identity.Service, tokenID string) {
				g := NewWithT(t)
				g.Expect(f.svc.RevokePAT(context.Background(), f.member.ID, f.member.ID, tokenID)).To(Succeed())
			},
			tokenRefused: true, want: identity.RoleMember.Permissions(),
		},
		"a token revoked by another replica is refused at once": {
			change: func(t *testing.T, f patFixture, replica *identity.Service, tokenID string) {
				g := NewWithT(t)
				g.Expect(replica.RevokePAT(context.Background(), f.member.ID, f.member.ID, tokenID)).To(Succeed())
			},
			tokenRefused: true, want: identity.RoleMember.Permissions(),
		},
		"a disabled user is refused at once": {
			change: func(t *testing.T, f patFixture, replica *identity.Service, _ string) {
				g := NewWithT(t)
				g.Expect(replica.Disable(context.Background(), f.admin.ID, f.memberAccount.AccountID)).To(Succeed())
			},
			tokenRefused: true, sessionRefused: true,
		},
		"a removed membership is refused at once": {
			change: func(t *testing.T, f patFixture, replica *identity.Service, _ string) {
				g := NewWithT(t)
				g.Expect(replica.RemoveWorkspaceMembership(context.Background(), f.admin.ID, f.ws.ID, f.member.ID)).To(Succeed())
			},
			tokenRefused: true,
		},
		"a disabled workspace is refused at once": {
			change: func(t *testing.T, f patFixture, _ *identity.Service, _ string) {
				f.exec(t, `UPDATE workspaces SET status = 'Disabled' WHERE id = ?`, f.ws.ID)
			},
			tokenRefused: true,
		},
		"a lowered role applies at once": {
			change: func(t *testing.T, f patFixture, replica *identity.Service, _ string) {
				g := NewWithT(t)
				_, err := replica.SetWorkspaceMembership(context.Background(), f.admin.ID, f.ws.ID, f.member.ID, identity.RoleViewer)
				g.Expect(err).NotTo(HaveOccurred())
			},
			want: identity.RoleViewer.Permissions(),
		},
		"a raised role applies at once": {
			change: func(t *testing.T, f patFixture, _ *identity.Service, _ string) {
				f.setRole(t, f.member.ID, f.ws.ID, identity.RoleAdmin)
			},
			want: identity.RoleAdmin.Permissions(),
		},
		"a role through the tenant adds at once": {
			change: func(t *testing.T, f patFixture, _ *identity.Service, _ string) {
				f.exec(t, `INSERT INTO memberships (principal_id, scope_kind, scope_id, role, created_at) VALUES (?, 'tenant', ?, 'Owner', ?)`,
					f.member.ID, f.ws.TenantID, time.Now().UTC())
			},
			want: identity.AllPermissions,
		},
		"a change unrelated to callers keeps them": {
			change: func(t *testing.T, f patFixture, _ *identity.Service, tokenID string) {
				f.exec(t, `UPDATE personal_access_tokens SET last_used_at = ? WHERE id = ?`, time.Now().UTC(), tokenID)
			},
			want: identity.RoleMember.Permissions(),
		},
	}
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		ctx := context.Background()
		s, err := store.Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		// Another replica: its own connections to the same database, its own Service.
		other := s
		if s.Dialect() == store.Postgres {
			if other, err = store.Open(ctx, opts); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { other.Close() })
		}
		base := newPATFixture(t, s)
		n := 0
		for name, tc := range cases {
			n++
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				f, username := base.withNewMember(t, n)
				replica := identity.New(other)
				replica.Clock = f.clock.Now
				pat, secret := f.createPAT(t, f.member.ID, f.ws.RouteName)
				session, _, err := f.svc.Login(ctx, username, password)
				g.Expect(err).NotTo(HaveOccurred())
				for range 2 {
					_, err = f.svc.AuthenticatePAT(ctx, secret)
					g.Expect(err).NotTo(HaveOccurred())
					_, err = f.svc.Authenticate(ctx, session.Token)
					g.Expect(err).NotTo(HaveOccurred())
					a, err := f.svc.Access(ctx, f.member.ID, f.ws.ID)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(a.Permissions).To(Equal(identity.RoleMember.Permissions()))
				}

				tc.change(t, f, replica, pat.ID)

				_, err = f.svc.AuthenticatePAT(ctx, secret)
				if tc.tokenRefused {
					g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
				} else {
					g.Expect(err).NotTo(HaveOccurred())
				}
				_, err = f.svc.Authenticate(ctx, session.Token)
				if tc.sessionRefused {
					g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
				} else {
					g.Expect(err).NotTo(HaveOccurred())
				}
				a, err := f.svc.Access(ctx, f.member.ID, f.ws.ID)
				if tc.want == 0 {
					g.Expect(err).To(MatchError(identity.ErrWorkspaceNotFound))
				} else {
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(a.Permissions).To(Equal(tc.want))
				}
			})
		}
	})
}

// withNewMember is f with a new Member of a new workspace of the same tenant, and its username:
// the cases of one database do not share who they change.
func (f patFixture) withNewMember(t *testing.T, n int) (patFixture, string) {
	t.Helper()
	ctx := context.Background()
	username := fmt.Sprintf("member-%d", n)
	acct, member, err := f.svc.CreateLocalAccount(ctx, f.admin.ID, identity.NewLocalAccount{Username: username, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := f.svc.CreateWorkspace(ctx, f.ws.TenantID, fmt.Sprintf("ws-%d", n), "")
	if err != nil {
		t.Fatal(err)
	}
	f.member, f.memberAccount, f.ws = member, acct, ws
	f.setRole(t, member.ID, ws.ID, identity.RoleMember)
	return f, username
}

// A session ended elsewhere, by a password change or a sign-out on another replica, is refused
// by the next request here; a kept token still ends at its expiry.
func TestAnEndedSessionOrTokenIsRefusedAtOnce(t *testing.T) {
	cases := map[string]func(t *testing.T, f patFixture, session identity.Session){
		"a password change ends the other sessions": func(t *testing.T, f patFixture, _ identity.Session) {
			_, err := identity.New(f.s).ChangePassword(context.Background(), f.memberAccount.AccountID, password, "Analytical-Engine-1837!")
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
		},
		"a sign-out through another replica": func(t *testing.T, f patFixture, session identity.Session) {
			NewWithT(t).Expect(identity.New(f.s).Logout(context.Background(), session.Token)).To(Succeed())
		},
		"the session's expiry passes": func(t *testing.T, f patFixture, _ identity.Session) {
			f.clock.Advance(24 * 365 * time.Hour)
		},
	}
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		base := newPATFixture(t, s)
		n := 0
		for name, change := range cases {
			n++
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				ctx := context.Background()
				f, username := base.withNewMember(t, n)
				session, _, err := f.svc.Login(ctx, username, password)
				g.Expect(err).NotTo(HaveOccurred())
				for range 2 {
					_, err = f.svc.Authenticate(ctx, session.Token)
					g.Expect(err).NotTo(HaveOccurred())
				}
				change(t, f, session)
				_, err = f.svc.Authenticate(ctx, session.Token)
				g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
			})
		}
		t.Run("a kept token ends at its expiry", func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			f, _ := base.withNewMember(t, 0)
			_, secret := f.createPAT(t, f.member.ID, f.ws.RouteName)
			_, err := f.svc.AuthenticatePAT(ctx, secret)
			g.Expect(err).NotTo(HaveOccurred())
			f.clock.Advance(31 * 24 * time.Hour)
			_, err = f.svc.AuthenticatePAT(ctx, secret)
			g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
		})
	})
}

// What a request with a known token costs once its caller is resolved: the one read of the
// identity generation (it was nine statements each time).
func TestAResolvedTokenCostsOneStatementPerRequest(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		f := newPATFixture(t, s)
		_, secret := f.createPAT(t, f.member.ID, f.ws.RouteName)
		request := func() {
			ctx, err := f.svc.Snapshot(context.Background())
			g.Expect(err).NotTo(HaveOccurred())
			pat, err := f.svc.AuthenticatePAT(ctx, secret)
			g.Expect(err).NotTo(HaveOccurred())
			_, err = f.svc.Access(ctx, pat.PrincipalID, pat.WorkspaceID)
			g.Expect(err).NotTo(HaveOccurred())
		}
		request()
		before := s.Counts()
		request()
		g.Expect(s.Counts().Sub(before).Statements).To(Equal(int64(1)))
	})
}
