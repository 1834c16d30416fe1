package identity_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// patFixture is an initialized identity store: the bootstrap administrator (no membership), a
// Member of the workspace "engine", and a second workspace "mill" of the same tenant where the
// Member has no membership.
type patFixture struct {
	s      *store.Store
	svc    *identity.Service
	clock  *clock
	admin  identity.Principal
	member identity.Principal
	// memberAccount is the Member's local account, to disable it.
	memberAccount identity.LocalAccount
	ws, other     identity.Workspace
}

const memberUsername = "Charles.Babbage"

func newPATFixture(t *testing.T, s *store.Store) patFixture {
	t.Helper()
	ctx := context.Background()
	svc, c := newService(s)
	_, admin, ws, err := svc.Bootstrap(ctx, bootstrapRequest(), noProvision)
	if err != nil {
		t.Fatal(err)
	}
	acct, member, err := svc.CreateLocalAccount(ctx, admin.ID, identity.NewLocalAccount{Username: memberUsername, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	other, err := svc.CreateWorkspace(ctx, ws.TenantID, "mill", "")
	if err != nil {
		t.Fatal(err)
	}
	f := patFixture{s: s, svc: svc, clock: c, admin: admin, member: member, memberAccount: acct, ws: ws, other: other}
	f.setRole(t, member.ID, ws.ID, identity.RoleMember)
	return f
}

// setRole gives the Principal the role in the workspace (none removes the membership).
func (f patFixture) setRole(t *testing.T, principalID, workspaceID string, role identity.Role) {
	t.Helper()
	if _, err := f.s.DB().Exec(f.s.Rebind(`DELETE FROM memberships WHERE principal_id = ? AND scope_kind = 'workspace' AND scope_id = ?`),
		principalID, workspaceID); err != nil {
		t.Fatal(err)
	}
	if role == "" {
		return
	}
	if _, err := f.s.DB().Exec(f.s.Rebind(`INSERT INTO memberships (principal_id, scope_kind, scope_id, role, created_at) VALUES (?, 'workspace', ?, ?, ?)`),
		principalID, workspaceID, string(role), time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
}

func (f patFixture) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if _, err := f.s.DB().Exec(f.s.Rebind(query), args...); err != nil {
		t.Fatal(err)
	}
}

// readWrite is a typical allow-list.
var readWrite = identity.PermissionsOf(identity.PermResourcesRead, identity.PermResourcesWrite)

func (f patFixture) newPAT(principalID, workspace string) identity.NewPAT {
	return identity.NewPAT{PrincipalID: principalID, WorkspaceID: workspace, Name: "nightly-build-token", Permissions: readWrite, ExpiresAt: f.clock.Now().Add(30 * 24 * time.Hour)}
}

func (f patFixture) createPAT(t *testing.T, principalID, workspace string) (identity.PersonalAccessToken, string) {
	t.Helper()
	pat, secret, err := f.svc.CreatePAT(context.Background(), principalID, f.newPAT(principalID, workspace))
	if err != nil {
		t.Fatalf("create PAT: %v", err)
	}
	return pat, secret
}

func TestParsePATAcceptsOnlyTheExactFormat(t *testing.T) {
	valid := identity.PATPrefix + strings.Repeat("A", 43)
	cases := map[string]struct {
		raw string
		ok  bool
	}{
		"the prefix and 32 bytes of base64url":         {valid, true},
		"url-safe characters are base64url":            {identity.PATPrefix + strings.Repeat("-_", 21) + "A", true},
		"empty":                                        {"", false},
		"the prefix alone":                             {identity.PATPrefix, false},
		"another prefix":                               {"platform_xat_" + strings.Repeat("A", 43), false},
		"the prefix in upper case":                     {"PLATFORM_PAT_" + strings.Repeat("A", 43), false},
		"one character short":                          {identity.PATPrefix + strings.Repeat("A", 42), false},
		"one character long":                           {valid + "A", false},
		"padding":                                      {valid + "=", false},
		"standard base64 alphabet":                     {identity.PATPrefix + strings.Repeat("+/", 21) + "A", false},
		"non-zero padding bits (not canonical)":        {identity.PATPrefix + strings.Repeat("A", 42) + "B", false},
		"surrounding whitespace":                       {" " + valid, false},
		"trailing newline":                             {valid + "\n", false},
		"a non-ASCII character of the same byte count": {identity.PATPrefix + strings.Repeat("A", 41) + "é", false},
		"a session token without the prefix":           {strings.Repeat("A", 43), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			secret, err := identity.ParsePAT(tc.raw)
			if !tc.ok {
				g.Expect(err).To(MatchError(identity.ErrMalformedPAT))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(secret.Encode()).To(Equal(tc.raw))
			g.Expect(fmt.Sprintf("%v %s %#v %+v", secret, secret, secret, secret)).NotTo(ContainSubstring(tc.raw[len(identity.PATPrefix)+8:]),
				"formatting shows the prefix only")
		})
	}
}

func TestPATSecretIsReturnedOnceAndOnlyItsDigestAndPrefixAreStored(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		f := newPATFixture(t, s)
		pat, secret := f.createPAT(t, f.member.ID, "engine")

		g.Expect(secret).To(MatchRegexp(`^platform_pat_[A-Za-z0-9_-]{43}$`))
		parsed, err := identity.ParsePAT(secret)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(parsed.Encode()).To(Equal(secret))
		g.Expect(pat.Prefix).To(Equal(secret[:len(identity.PATPrefix)+8]))
		g.Expect(pat.WorkspaceID).To(Equal(f.ws.ID))
		g.Expect(pat.WorkspaceName).To(Equal("engine"))
		g.Expect(pat.Permissions).To(Equal(readWrite))
		g.Expect(pat.Status(f.clock.Now())).To(Equal(identity.PATStatusActive))

		cells := strings.Join(allCells(t, s, "personal_access_tokens"), "\n")
		secretPart := secret[len(pat.Prefix):]
		g.Expect(cells).NotTo(ContainSubstring(secret))
		g.Expect(cells).NotTo(ContainSubstring(secretPart), "nothing of the token beyond its prefix is stored")
		digest := sha256.Sum256([]byte(secret))
		var stored, prefix string
		g.Expect(s.DB().QueryRow(`SELECT digest, prefix FROM personal_access_tokens`).Scan(&stored, &prefix)).To(Succeed())
		g.Expect(stored).To(Equal(hex.EncodeToString(digest[:])))
		g.Expect(prefix).To(Equal(pat.Prefix))

		listed, err := f.svc.ListPATs(ctx, f.member.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(listed).To(HaveLen(1))
		g.Expect(listed[0].ID).To(Equal(pat.ID))
		g.Expect(listed[0].CreatedAt).To(BeTemporally("==", pat.CreatedAt))
		g.Expect(listed[0].ExpiresAt).To(BeTemporally("==", pat.ExpiresAt))
		g.Expect(fmt.Sprintf("%+v", listed)).NotTo(ContainSubstring(secretPart), "a listing holds metadata only")
		g.Expect(fmt.Sprintf("%+v", listed)).NotTo(ContainSubstring(stored), "nor the digest")

		got, err := f.svc.AuthenticatePAT(ctx, secret)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.ID).To(Equal(pat.ID))
		g.Expect(got.PrincipalID).To(Equal(f.member.ID))
		g.Expect(got.Permissions).To(Equal(readWrite))
	})
}

func TestPATExpiryIsMandatoryInTheFutureAndAtMost365Days(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		f := newPATFixture(t, s)
		now := f.clock.Now()
		cases := map[string]struct {
			expiresAt time.Time
			ok        bool
		}{
			"an expiry is mandatory":                 {time.Time{}, false},
			"an expiry in the past is refused":       {now.Add(-time.Hour), false},
			"an expiry of now is refused":            {now, false},
			"more than 365 days is refused":          {now.Add(identity.MaxPATLifetime + time.Microsecond), false},
			"a minute ahead is accepted":             {now.Add(time.Minute), true},
			"exactly 365 days is accepted":           {now.Add(identity.MaxPATLifetime), true},
			"a time zone other than UTC is accepted": {now.Add(time.Hour).In(time.FixedZone("CET", 3600)), true},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				in := f.newPAT(f.member.ID, "engine")
				in.ExpiresAt = tc.expiresAt
				pat, secret, err := f.svc.CreatePAT(context.Background(), f.member.ID, in)
				if !tc.ok {
					g.Expect(err).To(MatchError(identity.ErrInvalidPATExpiry))
					g.Expect(secret).To(BeEmpty())
					return
				}
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(pat.ExpiresAt).To(BeTemporally("==", tc.expiresAt))
			})
		}
	})
}

func TestPATAllowListIsLimitedToWorkspaceReadResourcesAndRuns(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		f := newPATFixture(t, s)
		allowed := map[identity.Permission]bool{
			identity.PermWorkspacesRead: true, identity.PermResourcesRead: true, identity.PermResourcesWrite: true,
			identity.PermResourcesDelete: true, identity.PermRunsRead: true, identity.PermRunsExecute: true, identity.PermRunsDelete: true,
		}
		for _, p := range identity.Catalog {
			in := f.newPAT(f.member.ID, "engine")
			in.Permissions = identity.PermissionsOf(identity.PermResourcesRead, p)
			_, _, err := f.svc.CreatePAT(ctx, f.member.ID, in)
			if allowed[p] {
				g.Expect(err).NotTo(HaveOccurred(), string(p))
			} else {
				g.Expect(err).To(MatchError(identity.ErrInvalidPATPermission), string(p))
			}
		}
		in := f.newPAT(f.member.ID, "engine")
		in.Permissions = 0
		_, _, err := f.svc.CreatePAT(ctx, f.member.ID, in)
		g.Expect(err).To(MatchError(identity.ErrInvalidPATPermission), "an empty allow-list is refused")
		in.Permissions = identity.PATAllowed
		_, _, err = f.svc.CreatePAT(ctx, f.admin.ID, in)
		g.Expect(err).NotTo(HaveOccurred(), "the whole allowed set, even for a Member: rights are intersected at use")
	})
}

func TestPATsAreOnlyForActiveHumanPrincipalsWithAccessToTheWorkspace(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		f := newPATFixture(t, s)

		_, _, err := f.svc.CreatePAT(ctx, f.member.ID, f.newPAT(f.member.ID, f.ws.ID))
		g.Expect(err).NotTo(HaveOccurred(), "the workspace by id")
		_, _, err = f.svc.CreatePAT(ctx, f.member.ID, f.newPAT(f.member.ID, "mill"))
		g.Expect(err).To(MatchError(identity.ErrWorkspaceNotFound), "not a member of mill")
		_, _, err = f.svc.CreatePAT(ctx, f.member.ID, f.newPAT(f.member.ID, "nowhere"))
		g.Expect(err).To(MatchError(identity.ErrWorkspaceNotFound))
		pat, _, err := f.svc.CreatePAT(ctx, f.admin.ID, f.newPAT(f.admin.ID, "mill"))
		g.Expect(err).NotTo(HaveOccurred(), "a Platform administrator needs no membership")
		g.Expect(pat.WorkspaceID).To(Equal(f.other.ID))

		in := f.newPAT(f.member.ID, "engine")
		for _, name := range []string{"", " ci", "ci\n", strings.Repeat("n", identity.MaxPATNameLength+1), "a\x00b"} {
			in.Name = name
			_, _, err = f.svc.CreatePAT(ctx, f.member.ID, in)
			g.Expect(err).To(MatchError(identity.ErrInvalidPATName), "%q", name)
		}

		f.exec(t, `INSERT INTO principals (id, kind, display_name, email, status, created_at) VALUES ('robot', 'Workload', 'Robot', NULL, 'Active', ?)`, time.Now().UTC())
		f.setRole(t, "robot", f.ws.ID, identity.RoleOwner)
		_, _, err = f.svc.CreatePAT(ctx, f.admin.ID, f.newPAT("robot", "engine"))
		g.Expect(err).To(MatchError(identity.ErrPATPrincipal), "a workload gets no PAT")
		_, _, err = f.svc.CreatePAT(ctx, f.admin.ID, f.newPAT("nobody", "engine"))
		g.Expect(err).To(MatchError(identity.ErrPATPrincipal))

		g.Expect(f.svc.Disable(ctx, f.admin.ID, f.memberAccount.AccountID)).To(Succeed())
		_, _, err = f.svc.CreatePAT(ctx, f.member.ID, f.newPAT(f.member.ID, "engine"))
		g.Expect(err).To(MatchError(identity.ErrPATPrincipal), "a disabled Principal gets no PAT")
	})
}

func TestAuthenticatePATRefusesMalformedUnknownRevokedAndExpiredTokens(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		f := newPATFixture(t, s)
		pat, secret := f.createPAT(t, f.member.ID, "engine")
		revoked, revokedSecret := f.createPAT(t, f.member.ID, "engine")
		g.Expect(f.svc.RevokePAT(ctx, f.member.ID, f.member.ID, revoked.ID)).To(Succeed())

		flipped := []byte(secret)
		flipped[len(flipped)-2] ^= 1
		for name, raw := range map[string]string{
			"empty":            "",
			"malformed":        "platform_pat_short",
			"unknown":          identity.PATPrefix + strings.Repeat("A", 43),
			"altered":          string(flipped),
			"revoked":          revokedSecret,
			"its digest":       func() string { d := sha256.Sum256([]byte(secret)); return hex.EncodeToString(d[:]) }(),
			"its prefix alone": pat.Prefix,
		} {
			_, err := f.svc.AuthenticatePAT(ctx, raw)
			g.Expect(err).To(MatchError(identity.ErrUnauthenticated), name)
		}

		_, err := f.svc.AuthenticatePAT(ctx, secret)
		g.Expect(err).NotTo(HaveOccurred())
		f.clock.Advance(pat.ExpiresAt.Sub(f.clock.Now()) - time.Microsecond)
		_, err = f.svc.AuthenticatePAT(ctx, secret)
		g.Expect(err).NotTo(HaveOccurred(), "valid until its expiry")
		f.clock.Advance(time.Microsecond)
		_, err = f.svc.AuthenticatePAT(ctx, secret)
		g.Expect(err).To(MatchError(identity.ErrUnauthenticated), "expired at its expiry")

		listed, err := f.svc.ListPATs(ctx, f.member.ID)
		g.Expect(err).NotTo(HaveOccurred())
		statuses := map[string]string{}
		for _, p := range listed {
			statuses[p.ID] = p.Status(f.clock.Now())
		}
		g.Expect(statuses).To(Equal(map[string]string{pat.ID: identity.PATStatusExpired, revoked.ID: identity.PATStatusRevoked}))
	})
}

func TestAPATFailsAtOnceWhenItsPrincipalWorkspaceOrTenantIsDisabledOrItsMembershipIsGone(t *testing.T) {
	cases := map[string]struct {
		// break makes the member's PAT of engine unusable.
		breakIt func(t *testing.T, f patFixture)
	}{
		"a disabled Principal": {func(t *testing.T, f patFixture) {
			if err := f.svc.Disable(context.Background(), f.admin.ID, f.memberAccount.AccountID); err != nil {
				t.Fatal(err)
			}
		}},
		"a disabled workspace": {func(t *testing.T, f patFixture) {
			f.exec(t, `UPDATE workspaces SET status = 'Disabled' WHERE id = ?`, f.ws.ID)
		}},
		"a disabled tenant": {func(t *testing.T, f patFixture) {
			f.exec(t, `UPDATE tenants SET status = 'Disabled' WHERE id = ?`, f.ws.TenantID)
		}},
		"a removed membership": {func(t *testing.T, f patFixture) {
			f.setRole(t, f.member.ID, f.ws.ID, "")
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
				g := NewWithT(t)
				ctx := context.Background()
				f := newPATFixture(t, s)
				_, secret := f.createPAT(t, f.member.ID, "engine")
				_, err := f.svc.AuthenticatePAT(ctx, secret)
				g.Expect(err).NotTo(HaveOccurred())
				tc.breakIt(t, f)
				_, err = f.svc.AuthenticatePAT(ctx, secret)
				g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
			})
		})
	}
}

func TestRevokePATRevokesOnlyTheOwnersTokenAndRevokeAllRevokesEveryRemainingOne(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		f := newPATFixture(t, s)
		one, oneSecret := f.createPAT(t, f.member.ID, "engine")
		_, twoSecret := f.createPAT(t, f.member.ID, "engine")
		_, threeSecret := f.createPAT(t, f.member.ID, "engine")
		adminPAT, adminSecret := f.createPAT(t, f.admin.ID, "engine")

		g.Expect(f.svc.RevokePAT(ctx, f.member.ID, f.member.ID, adminPAT.ID)).To(MatchError(identity.ErrPATNotFound), "another Principal's token is not found")
		g.Expect(f.svc.RevokePAT(ctx, f.member.ID, f.member.ID, "no-such-token")).To(MatchError(identity.ErrPATNotFound))
		g.Expect(f.svc.RevokePAT(ctx, f.member.ID, f.member.ID, one.ID)).To(Succeed())
		g.Expect(f.svc.RevokePAT(ctx, f.member.ID, f.member.ID, one.ID)).To(Succeed(), "revoking again is no error")
		g.Expect(f.svc.AuthenticatePAT(ctx, oneSecret)).Error().To(MatchError(identity.ErrUnauthenticated))
		g.Expect(f.svc.AuthenticatePAT(ctx, twoSecret)).Error().NotTo(HaveOccurred())

		n, err := f.svc.RevokeAllPATs(ctx, f.admin.ID, f.member.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(Equal(2), "the two that were not revoked yet")
		for _, secret := range []string{twoSecret, threeSecret} {
			g.Expect(f.svc.AuthenticatePAT(ctx, secret)).Error().To(MatchError(identity.ErrUnauthenticated))
		}
		g.Expect(f.svc.AuthenticatePAT(ctx, adminSecret)).Error().NotTo(HaveOccurred(), "another Principal's tokens are untouched")
		_, err = f.svc.RevokeAllPATs(ctx, f.admin.ID, "nobody")
		g.Expect(err).To(MatchError(identity.ErrPrincipalNotFound))
		_, err = f.svc.ListPATs(ctx, "nobody")
		g.Expect(err).To(MatchError(identity.ErrPrincipalNotFound))

		g.Expect(actions(t, f.svc)).To(HaveEach(Not(HavePrefix("personal-access-token.revoked failure"))))
		var revocations int
		for _, a := range actions(t, f.svc) {
			if a == "personal-access-token.revoked success" {
				revocations++
			}
		}
		g.Expect(revocations).To(Equal(1), "a second revocation of the same token records nothing")
		g.Expect(actions(t, f.svc)).To(ContainElement("personal-access-token.revoked-all success"))
	})
}

func TestPATLastUsedIsWrittenAtMostOnceAMinute(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		f := newPATFixture(t, s)
		pat, secret := f.createPAT(t, f.member.ID, "engine")
		lastUsed := func() time.Time {
			listed, err := f.svc.ListPATs(ctx, f.member.ID)
			g.Expect(err).NotTo(HaveOccurred())
			return listed[0].LastUsedAt
		}
		g.Expect(lastUsed().IsZero()).To(BeTrue(), "never used")
		first := f.clock.Now()
		g.Expect(f.svc.AuthenticatePAT(ctx, secret)).Error().NotTo(HaveOccurred())
		g.Expect(lastUsed()).To(BeTemporally("==", first))
		f.clock.Advance(59 * time.Second)
		g.Expect(f.svc.AuthenticatePAT(ctx, secret)).Error().NotTo(HaveOccurred())
		g.Expect(lastUsed()).To(BeTemporally("==", first), "not written again within the minute")
		f.clock.Advance(time.Second)
		g.Expect(f.svc.AuthenticatePAT(ctx, secret)).Error().NotTo(HaveOccurred())
		g.Expect(lastUsed()).To(BeTemporally("==", f.clock.Now()))
		g.Expect(pat.LastUsedAt.IsZero()).To(BeTrue())
	})
}

func TestPATAuditRecordsUseTheSpecActionsAndHoldNoTokenMaterial(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		f := newPATFixture(t, s)
		pat, secret := f.createPAT(t, f.member.ID, "engine")
		g.Expect(f.svc.RevokePAT(ctx, f.admin.ID, f.member.ID, pat.ID)).To(Succeed())
		_, _ = f.createPAT(t, f.member.ID, "engine")
		_, err := f.svc.RevokeAllPATs(ctx, f.member.ID, f.member.ID)
		g.Expect(err).NotTo(HaveOccurred())

		events, err := f.svc.Audit.Latest(ctx, 0)
		g.Expect(err).NotTo(HaveOccurred())
		byAction := map[string]identity.Event{}
		for _, e := range events {
			byAction[e.Action] = e
		}
		created := byAction[identity.ActionPersonalAccessTokenCreated]
		g.Expect(created.ActorID).To(Equal(f.member.ID))
		g.Expect(created.TargetID).To(Equal(f.member.ID))
		g.Expect(created.WorkspaceID).To(Equal(f.ws.ID))
		g.Expect(created.TenantID).To(Equal(f.ws.TenantID))
		revoked := byAction[identity.ActionPersonalAccessTokenRevoked]
		g.Expect(revoked.ActorID).To(Equal(f.admin.ID), "the administrator revoked it")
		g.Expect(revoked.TargetID).To(Equal(f.member.ID))
		g.Expect(byAction).To(HaveKey(identity.ActionPersonalAccessTokenRevokedAll))

		cells := strings.Join(allCells(t, s, "audit_events"), "\n")
		for _, material := range []string{secret, secret[len(identity.PATPrefix):], pat.Prefix, pat.Prefix[len(identity.PATPrefix):], pat.Name} {
			g.Expect(cells).NotTo(ContainSubstring(material))
		}
		digest := sha256.Sum256([]byte(secret))
		g.Expect(cells).NotTo(ContainSubstring(hex.EncodeToString(digest[:])))
	})
}

func TestConcurrentRevocationsOfOneTokenRecordOneRevocation(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		f := newPATFixture(t, s)
		pat, _ := f.createPAT(t, f.member.ID, "engine")
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() { errs <- f.svc.RevokePAT(ctx, f.member.ID, f.member.ID, pat.ID) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			g.Expect(err).NotTo(HaveOccurred())
		}
		var revocations int
		for _, a := range actions(t, f.svc) {
			if a == "personal-access-token.revoked success" {
				revocations++
			}
		}
		g.Expect(revocations).To(Equal(1))
	})
}
