package identity_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

const (
	issuer  = "https://login.example.test/tenant-A"
	subject = "248289761001"
)

// externalPrincipal stores a Principal without a local account, as one that signs in only
// through an OIDC provider.
func externalPrincipal(t *testing.T, s *store.Store, kind, status string) string {
	t.Helper()
	id := "ext-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + time.Now().Format("150405.000000000")
	if _, err := s.DB().Exec(s.Rebind(`INSERT INTO principals (id, kind, display_name, status, created_at) VALUES (?, ?, ?, ?, ?)`),
		id, kind, "Katherine", status, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	return id
}

func setStatus(t *testing.T, s *store.Store, principalID, status string) {
	t.Helper()
	if _, err := s.DB().Exec(s.Rebind(`UPDATE principals SET status = ? WHERE id = ?`), status, principalID); err != nil {
		t.Fatal(err)
	}
}

func TestLinkingIsIdempotentForTheSamePrincipalAndAConflictForAnother(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, clock := newService(s)
		_, ada := createAccount(t, svc)
		other := externalPrincipal(t, s, identity.KindHuman, identity.StatusActive)

		link, created, err := svc.LinkExternalIdentity(ctx, "admin", ada.ID, issuer, subject)
		clock.Advance(time.Second) // links are listed in the order they were made
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(created).To(BeTrue())
		g.Expect(link).To(And(HaveField("Issuer", issuer), HaveField("Subject", subject), HaveField("PrincipalID", ada.ID)))

		again, created, err := svc.LinkExternalIdentity(ctx, "admin", ada.ID, issuer, subject)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(created).To(BeFalse(), "linking the same pair to the same Principal changes nothing")
		g.Expect(again.ID).To(Equal(link.ID))

		_, _, err = svc.LinkExternalIdentity(ctx, "admin", other, issuer, subject)
		g.Expect(err).To(MatchError(identity.ErrExternalIdentityTaken))

		// The pair is exact: another case or a trailing slash is another identity.
		for _, pair := range [][2]string{{issuer, strings.ToUpper(subject[:1]) + "x" + subject[1:]}, {issuer + "/", subject}, {strings.ToLower(issuer), subject}} {
			_, created, err := svc.LinkExternalIdentity(ctx, "admin", other, pair[0], pair[1])
			g.Expect(err).NotTo(HaveOccurred(), "pair %q", pair)
			g.Expect(created).To(BeTrue())
		}
		_, created, err = svc.LinkExternalIdentity(ctx, "admin", other, issuer, "Alice")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(created).To(BeTrue())
		_, created, err = svc.LinkExternalIdentity(ctx, "admin", ada.ID, issuer, "alice")
		g.Expect(err).NotTo(HaveOccurred(), "subjects differing in case only are different identities")
		g.Expect(created).To(BeTrue())

		links, err := svc.ListExternalIdentities(ctx, ada.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(links).To(HaveLen(2))
		g.Expect(links[0].ID).To(Equal(link.ID))

		g.Expect(actions(t, svc)).To(Equal([]string{
			"local-account.created success",
			"external-identity.linked success",
			"external-identity.linked failure",
			"external-identity.linked success", "external-identity.linked success", "external-identity.linked success",
			"external-identity.linked success", "external-identity.linked success",
		}))
		events, err := svc.Audit.Latest(ctx, 0)
		g.Expect(err).NotTo(HaveOccurred())
		for _, e := range events {
			for _, v := range []string{e.ActorID, e.TargetID, e.ReasonCode, e.CorrelationID, e.TenantID, e.WorkspaceID} {
				g.Expect(v).NotTo(ContainSubstring("example.test"), "audit holds no issuer")
				g.Expect(v).NotTo(ContainSubstring(subject), "audit holds no subject")
			}
		}
	})
}

func TestOnlyAnExistingActiveHumanPrincipalCanBeLinked(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc, _ := newService(s)
		cases := map[string]struct {
			principal string
			want      error
		}{
			"missing principal":  {principal: "no-such-principal", want: identity.ErrPrincipalNotFound},
			"disabled principal": {principal: externalPrincipal(t, s, identity.KindHuman, identity.StatusDisabled), want: identity.ErrPrincipalNotLinkable},
			"workload principal": {principal: externalPrincipal(t, s, identity.KindWorkload, identity.StatusActive), want: identity.ErrPrincipalNotLinkable},
			"bad issuer":         {principal: externalPrincipal(t, s, identity.KindHuman, identity.StatusActive), want: identity.ErrInvalidIssuer},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				iss := issuer
				if tc.want == identity.ErrInvalidIssuer {
					iss = "https://user@login.example.test"
				}
				_, _, err := svc.LinkExternalIdentity(ctx, "admin", tc.principal, iss, subject)
				g.Expect(err).To(MatchError(tc.want))
			})
		}
		g := NewWithT(t)
		_, _, err := svc.LinkExternalIdentity(ctx, "admin", externalPrincipal(t, s, identity.KindHuman, identity.StatusActive), issuer, " padded")
		g.Expect(err).To(MatchError(identity.ErrInvalidSubject))
		_, err = svc.ListExternalIdentities(ctx, "no-such-principal")
		g.Expect(err).To(MatchError(identity.ErrPrincipalNotFound))
		var n int
		g.Expect(s.DB().QueryRow(`SELECT COUNT(*) FROM external_identities`).Scan(&n)).To(Succeed())
		g.Expect(n).To(BeZero())
	})
}

func TestTheLastAuthenticationMethodCannotBeUnlinked(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, _ := newService(s)

		// A local account counts as a method: its only link may go.
		_, ada := createAccount(t, svc)
		link, _, err := svc.LinkExternalIdentity(ctx, "admin", ada.ID, issuer, subject)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(svc.UnlinkExternalIdentity(ctx, "admin", ada.ID, link.ID)).To(Succeed())
		g.Expect(svc.ListExternalIdentities(ctx, ada.ID)).To(BeEmpty())

		// Without a local account, the last link stays.
		kate := externalPrincipal(t, s, identity.KindHuman, identity.StatusActive)
		first, _, err := svc.LinkExternalIdentity(ctx, "admin", kate, issuer, "kate-1")
		g.Expect(err).NotTo(HaveOccurred())
		second, _, err := svc.LinkExternalIdentity(ctx, "admin", kate, issuer, "kate-2")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(svc.UnlinkExternalIdentity(ctx, "admin", ada.ID, first.ID)).To(MatchError(identity.ErrExternalIdentityNotFound), "a link of another Principal is not found")
		g.Expect(svc.UnlinkExternalIdentity(ctx, "admin", "no-such-principal", first.ID)).To(MatchError(identity.ErrPrincipalNotFound))
		g.Expect(svc.UnlinkExternalIdentity(ctx, "admin", kate, first.ID)).To(Succeed())
		g.Expect(svc.UnlinkExternalIdentity(ctx, "admin", kate, first.ID)).To(MatchError(identity.ErrExternalIdentityNotFound))
		g.Expect(svc.UnlinkExternalIdentity(ctx, "admin", kate, second.ID)).To(MatchError(identity.ErrLastAuthenticationMethod))
		g.Expect(svc.ListExternalIdentities(ctx, kate)).To(ConsistOf(HaveField("ID", second.ID)))

		g.Expect(actions(t, svc)).To(HaveExactElements(
			"local-account.created success",
			"external-identity.linked success", "external-identity.unlinked success",
			"external-identity.linked success", "external-identity.linked success",
			"external-identity.unlinked success", "external-identity.unlinked failure",
		))
	})
}

// Two services stand for two replicas: the in-process lock does not help, the database must
// serialize the unlinks so that one of the two last methods stays.
func TestConcurrentUnlinksAreSerializedAndKeepOneMethod(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		replicas := []*identity.Service{identity.New(s), identity.New(s)}
		for round := range 5 {
			kate := externalPrincipal(t, s, identity.KindHuman, identity.StatusActive)
			var ids []string
			for i := range 2 {
				link, _, err := replicas[0].LinkExternalIdentity(ctx, "admin", kate, issuer, "kate-"+string(rune('a'+round))+string(rune('0'+i)))
				g.Expect(err).NotTo(HaveOccurred())
				ids = append(ids, link.ID)
			}
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Go(func() { errs[i] = replicas[i].UnlinkExternalIdentity(ctx, "admin", kate, ids[i]) })
			}
			wg.Wait()
			g.Expect(errs).To(ConsistOf(BeNil(), MatchError(identity.ErrLastAuthenticationMethod)), "round %d", round)
			g.Expect(replicas[0].ListExternalIdentities(ctx, kate)).To(HaveLen(1))
		}
	})
}

func TestPrincipalResolutionUsesTheExactPairOfAnActivePrincipal(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, _ := newService(s)
		kate := externalPrincipal(t, s, identity.KindHuman, identity.StatusActive)
		_, _, err := svc.LinkExternalIdentity(ctx, "admin", kate, issuer, "Kate")
		g.Expect(err).NotTo(HaveOccurred())

		p, err := svc.PrincipalByExternalIdentity(ctx, issuer, "Kate")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.ID).To(Equal(kate))
		for _, pair := range [][2]string{{issuer, "kate"}, {issuer, "KATE"}, {issuer + "/", "Kate"}, {"https://LOGIN.example.test/tenant-A", "Kate"}, {issuer, "Kate "}, {"", ""}} {
			_, err := svc.PrincipalByExternalIdentity(ctx, pair[0], pair[1])
			g.Expect(err).To(MatchError(identity.ErrNoLinkedPrincipal), "pair %q", pair)
		}
		setStatus(t, s, kate, identity.StatusDisabled)
		_, err = svc.PrincipalByExternalIdentity(ctx, issuer, "Kate")
		g.Expect(err).To(MatchError(identity.ErrNoLinkedPrincipal), "a disabled Principal is not resolved")
	})
}

func TestExternalSessionsEndWithTheirLinkAndFailWhileThePrincipalIsDisabled(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, clk := newService(s)
		acct, ada := createAccount(t, svc)
		local, _, err := svc.Login(ctx, username, password)
		g.Expect(err).NotTo(HaveOccurred())

		_, _, err = svc.OpenExternalSession(ctx, issuer, subject)
		g.Expect(err).To(MatchError(identity.ErrNoLinkedPrincipal), "an unlinked subject gets no session")
		link, _, err := svc.LinkExternalIdentity(ctx, "admin", ada.ID, issuer, subject)
		g.Expect(err).NotTo(HaveOccurred())
		sess, p, err := svc.OpenExternalSession(ctx, issuer, subject)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.ID).To(Equal(ada.ID))
		g.Expect(sess.AccountID).To(BeEmpty())
		got, err := svc.Authenticate(ctx, sess.Token)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.ID).To(Equal(ada.ID))

		// Rotating the local account's stamp ends local sessions only.
		_, err = svc.RevokeOtherSessions(ctx, acct.AccountID)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = svc.Authenticate(ctx, local.Token)
		g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
		g.Expect(svc.Authenticate(ctx, sess.Token)).To(HaveField("ID", ada.ID))

		// A disabled Principal's external session fails.
		setStatus(t, s, ada.ID, identity.StatusDisabled)
		_, err = svc.Authenticate(ctx, sess.Token)
		g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
		_, _, err = svc.OpenExternalSession(ctx, issuer, subject)
		g.Expect(err).To(MatchError(identity.ErrNoLinkedPrincipal))
		setStatus(t, s, ada.ID, identity.StatusActive)
		g.Expect(svc.Authenticate(ctx, sess.Token)).To(HaveField("ID", ada.ID))

		// Unlinking ends the sessions of the link at once.
		g.Expect(svc.UnlinkExternalIdentity(ctx, "admin", ada.ID, link.ID)).To(Succeed())
		_, err = svc.Authenticate(ctx, sess.Token)
		g.Expect(err).To(MatchError(identity.ErrUnauthenticated))

		// External sessions expire like local ones, and signing out records nothing.
		_, _, err = svc.LinkExternalIdentity(ctx, "admin", ada.ID, issuer, subject)
		g.Expect(err).NotTo(HaveOccurred())
		sess, _, err = svc.OpenExternalSession(ctx, issuer, subject)
		g.Expect(err).NotTo(HaveOccurred())
		clk.Advance(identity.DefaultSessionLifetime)
		_, err = svc.Authenticate(ctx, sess.Token)
		g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
		sess, _, err = svc.OpenExternalSession(ctx, issuer, subject)
		g.Expect(err).NotTo(HaveOccurred())
		before := len(actions(t, svc))
		g.Expect(svc.Logout(ctx, sess.Token)).To(Succeed())
		_, err = svc.Authenticate(ctx, sess.Token)
		g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
		g.Expect(actions(t, svc)).To(HaveLen(before))

		var stored int
		g.Expect(s.DB().QueryRow(s.Rebind(`SELECT COUNT(*) FROM sessions WHERE id = ?`), sess.Token).Scan(&stored)).To(Succeed())
		g.Expect(stored).To(BeZero(), "tokens are stored as digests")
	})
}

func TestValidateIssuer(t *testing.T) {
	cases := map[string]struct {
		issuer string
		valid  bool
	}{
		"https URL":                  {"https://login.example.test", true},
		"http URL":                   {"http://127.0.0.1:8080", true},
		"path with mixed case":       {"https://login.example.test/Tenant-A/v2.0", true},
		"trailing slash":             {"https://login.example.test/", true},
		"empty":                      {"", false},
		"no scheme":                  {"login.example.test", false},
		"other scheme":               {"ftp://login.example.test", false},
		"uppercase scheme":           {"HTTPS://login.example.test", false},
		"no host":                    {"https:///path", false},
		"port only":                  {"https://:443", false},
		"opaque":                     {"https:login.example.test", false},
		"user information":           {"https://user@login.example.test", false},
		"user and password":          {"https://user:pw@login.example.test", false},
		"query":                      {"https://login.example.test/?a=b", false},
		"empty query":                {"https://login.example.test/?", false},
		"fragment":                   {"https://login.example.test/#x", false},
		"leading space":              {" https://login.example.test", false},
		"trailing newline":           {"https://login.example.test\n", false},
		"inner space":                {"https://login.example.test/a b", false},
		"control character":          {"https://login.example.test/\x7f", false},
		"non-ASCII":                  {"https://lögin.example.test", false},
		"bad escape":                 {"https://login.example.test/%zz", false},
		"too long":                   {"https://login.example.test/" + strings.Repeat("a", identity.MaxIssuerLength), false},
		"longest":                    {"https://e.test/" + strings.Repeat("a", identity.MaxIssuerLength-len("https://e.test/")), true},
		"bracketed IPv6 with a port": {"https://[::1]:8443/realm", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := identity.ValidateIssuer(tc.issuer)
			if tc.valid && err != nil {
				t.Errorf("ValidateIssuer(%q) = %v, want nil", tc.issuer, err)
			}
			if !tc.valid && err == nil {
				t.Errorf("ValidateIssuer(%q) = nil, want an error", tc.issuer)
			}
		})
	}
}

func TestValidateSubject(t *testing.T) {
	cases := map[string]struct {
		subject string
		valid   bool
	}{
		"digits":             {"248289761001", true},
		"mixed case":         {"AbC-xyz", true},
		"inner space":        {"a b", true},
		"unicode":            {"ünïcödé", true},
		"longest":            {strings.Repeat("s", identity.MaxSubjectLength), true},
		"empty":              {"", false},
		"too long":           {strings.Repeat("s", identity.MaxSubjectLength+1), false},
		"leading space":      {" a", false},
		"trailing tab":       {"a\t", false},
		"non-breaking space": {"a\u00a0", false},
		"control":            {"a\x00b", false},
		"C1 control":         {"a\u0085b", false},
		"invalid UTF-8":      {"a\xffb", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := identity.ValidateSubject(tc.subject)
			if tc.valid && err != nil {
				t.Errorf("ValidateSubject(%q) = %v, want nil", tc.subject, err)
			}
			if !tc.valid && err == nil {
				t.Errorf("ValidateSubject(%q) = nil, want an error", tc.subject)
			}
		})
	}
}
