package identity_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

const (
	username = "Ada.Lovelace"
	password = "Analytical-Engine-1843"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newService(s *store.Store) (*identity.Service, *clock) {
	c := &clock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	svc := identity.New(s)
	svc.Clock = c.Now
	return svc, c
}

func createAccount(t *testing.T, svc *identity.Service) (identity.LocalAccount, identity.Principal) {
	t.Helper()
	acct, p, err := svc.CreateLocalAccount(context.Background(), "", identity.NewLocalAccount{Username: username, Password: password, Email: "ada@example.test"})
	if err != nil {
		t.Fatalf("create account: %v", err)
	}
	return acct, p
}

func actions(t *testing.T, svc *identity.Service) []string {
	t.Helper()
	events, err := svc.Audit.Latest(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := len(events) - 1; i >= 0; i-- {
		names = append(names, events[i].Action+" "+events[i].Outcome)
	}
	return names
}

func TestLoginSucceedsWithTheRightPasswordCaseInsensitiveUsername(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, _ := newService(s)
		acct, p := createAccount(t, svc)
		g.Expect(p.Kind).To(Equal(identity.KindHuman))
		g.Expect(p.Status).To(Equal(identity.StatusActive))

		_, _, err := svc.CreateLocalAccount(ctx, "", identity.NewLocalAccount{Username: "ADA.LOVELACE", Password: password})
		g.Expect(err).To(MatchError(identity.ErrUsernameTaken), "usernames are unique case-insensitively")

		sess, got, err := svc.Login(ctx, "ada.LOVELACE", password)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.ID).To(Equal(p.ID))
		g.Expect(sess.AccountID).To(Equal(acct.AccountID))
		g.Expect(len(sess.Token)).To(BeNumerically(">=", 22), "at least 128 bits")

		who, err := svc.Authenticate(ctx, sess.Token)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(who.ID).To(Equal(p.ID))
		mine, err := svc.LocalAccountOf(ctx, who.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(mine.AccountID).To(Equal(acct.AccountID))
		g.Expect(mine.Username).To(Equal(username), "the spelling given at creation is kept")

		g.Expect(svc.Logout(ctx, sess.Token)).To(Succeed())
		_, err = svc.Authenticate(ctx, sess.Token)
		g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
		g.Expect(actions(t, svc)).To(Equal([]string{
			"local-account.created success", "local-account.login success", "local-account.logout success"}))
	})
}

func TestWrongPasswordsLockTheAccountUntilTheLockoutPeriodEnds(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, clk := newService(s)
		createAccount(t, svc)

		_, _, err := svc.Login(ctx, "nobody", password)
		g.Expect(err).To(MatchError(identity.ErrInvalidCredentials))
		for i := 1; i <= identity.DefaultMaxFailedAttempts; i++ {
			_, _, err := svc.Login(ctx, username, "Wrong-Password-1")
			g.Expect(err).To(MatchError(identity.ErrInvalidCredentials), "attempt %d", i)
		}
		_, _, err = svc.Login(ctx, username, password)
		g.Expect(err).To(MatchError(identity.ErrLockedOut), "even the right password is refused while locked")

		clk.Advance(identity.DefaultLockoutDuration - time.Second)
		_, _, err = svc.Login(ctx, username, password)
		g.Expect(err).To(MatchError(identity.ErrLockedOut))

		clk.Advance(time.Second)
		_, _, err = svc.Login(ctx, username, password)
		g.Expect(err).NotTo(HaveOccurred(), "the lockout ends after its period")

		events, err := svc.Audit.Latest(ctx, 0)
		g.Expect(err).NotTo(HaveOccurred())
		var reasons []string
		for i := len(events) - 1; i >= 0; i-- {
			if events[i].Action == identity.ActionLocalAccountLogin {
				reasons = append(reasons, events[i].Outcome+":"+events[i].ReasonCode)
			}
		}
		g.Expect(reasons).To(Equal([]string{
			"failure:invalid-credentials", // unknown user
			"failure:invalid-credentials", "failure:invalid-credentials", "failure:invalid-credentials", "failure:invalid-credentials",
			"failure:locked-out", // the fifth wrong password locks
			"failure:locked-out", "failure:locked-out",
			"success:",
		}))
		g.Expect(events[len(events)-2].TargetID).To(BeEmpty(), "an unknown username has no target")
	})
}

func TestSuccessfulLoginResetsTheFailedAttemptCount(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, _ := newService(s)
		svc.MaxFailedAttempts = 2
		acct, _ := createAccount(t, svc)

		_, _, err := svc.Login(ctx, username, "Wrong-Password-1")
		g.Expect(err).To(MatchError(identity.ErrInvalidCredentials))
		_, _, err = svc.Login(ctx, username, password)
		g.Expect(err).NotTo(HaveOccurred())
		var failed int
		g.Expect(s.DB().QueryRow(s.Rebind(`SELECT failed_attempts FROM local_accounts WHERE account_id = ?`), acct.AccountID).Scan(&failed)).To(Succeed())
		g.Expect(failed).To(Equal(0))
		_, _, err = svc.Login(ctx, username, "Wrong-Password-1")
		g.Expect(err).To(MatchError(identity.ErrInvalidCredentials), "one failure after a reset does not lock")
	})
}

func TestDisabledAccountCannotLogInAndItsSessionsFailAtOnce(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, clk := newService(s)
		acct, p := createAccount(t, svc)
		sess, _, err := svc.Login(ctx, username, password)
		g.Expect(err).NotTo(HaveOccurred())

		g.Expect(svc.Disable(ctx, "admin-principal", acct.AccountID)).To(Succeed())
		_, err = svc.Authenticate(ctx, sess.Token)
		g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
		_, _, err = svc.Login(ctx, username, password)
		g.Expect(err).To(MatchError(identity.ErrAccountDisabled))
		got, err := svc.Principal(ctx, p.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status).To(Equal(identity.StatusDisabled))

		clk.Advance(365 * 24 * time.Hour)
		_, _, err = svc.Login(ctx, username, password)
		g.Expect(err).To(MatchError(identity.ErrAccountDisabled), "the lockout of a disabled account is indefinite")

		g.Expect(svc.Enable(ctx, "admin-principal", acct.AccountID)).To(Succeed())
		got, err = svc.Principal(ctx, p.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status).To(Equal(identity.StatusActive))
		_, err = svc.Authenticate(ctx, sess.Token)
		g.Expect(err).To(MatchError(identity.ErrUnauthenticated), "enabling does not revive old sessions")
		_, _, err = svc.Login(ctx, username, password)
		g.Expect(err).NotTo(HaveOccurred())

		events, err := svc.Audit.Latest(ctx, 3)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(events[1].Action).To(Equal("local-account.enabled"))
		g.Expect(events[1].ActorID).To(Equal("admin-principal"))
		g.Expect(events[1].TargetID).To(Equal(p.ID))
		g.Expect(events[2].Action).To(Equal("local-account.login")) // the refused login after a year
	})
}

func TestPasswordChangeSignsOutOtherSessionsButNotTheCallersNewOne(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, _ := newService(s)
		acct, p := createAccount(t, svc)
		laptop, _, err := svc.Login(ctx, username, password)
		g.Expect(err).NotTo(HaveOccurred())
		phone, _, err := svc.Login(ctx, username, password)
		g.Expect(err).NotTo(HaveOccurred())

		const next = "Difference-Engine-1822"
		_, err = svc.ChangePassword(ctx, acct.AccountID, "Not-The-Current-1", next)
		g.Expect(err).To(MatchError(identity.ErrInvalidCredentials), "the current password is required")
		_, err = svc.ChangePassword(ctx, acct.AccountID, password, "short")
		g.Expect(err).To(BeAssignableToTypeOf(&identity.PasswordError{}))

		fresh, err := svc.ChangePassword(ctx, acct.AccountID, password, next)
		g.Expect(err).NotTo(HaveOccurred())
		for _, old := range []identity.Session{laptop, phone} {
			_, err = svc.Authenticate(ctx, old.Token)
			g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
		}
		who, err := svc.Authenticate(ctx, fresh.Token)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(who.ID).To(Equal(p.ID))

		// Revoking other sessions works the same way without a password.
		again, err := svc.RevokeOtherSessions(ctx, acct.AccountID)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = svc.Authenticate(ctx, fresh.Token)
		g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
		_, err = svc.Authenticate(ctx, again.Token)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(actions(t, svc)[3:]).To(Equal([]string{"local-account.password-changed success", "local-account.sessions-revoked success"}))
	})
}

func TestSessionsExpireAfterTheirLifetime(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, clk := newService(s)
		createAccount(t, svc)
		sess, _, err := svc.Login(ctx, username, password)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sess.ExpiresAt).To(Equal(clk.Now().Add(identity.DefaultSessionLifetime)))

		clk.Advance(identity.DefaultSessionLifetime - time.Second)
		_, err = svc.Authenticate(ctx, sess.Token)
		g.Expect(err).NotTo(HaveOccurred())
		clk.Advance(time.Second)
		_, err = svc.Authenticate(ctx, sess.Token)
		g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
		_, err = svc.Authenticate(ctx, "")
		g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
	})
}

func TestExpiredSessionsArePurgedAtTheNextLoginOfTheAccount(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, clk := newService(s)
		createAccount(t, svc)
		_, _, err := svc.Login(ctx, username, password)
		g.Expect(err).NotTo(HaveOccurred())
		clk.Advance(identity.DefaultSessionLifetime - 500*time.Millisecond)
		live, _, err := svc.Login(ctx, username, password)
		g.Expect(err).NotTo(HaveOccurred())
		clk.Advance(2 * time.Second) // purging allows a second of slack
		_, _, err = svc.Login(ctx, username, password)
		g.Expect(err).NotTo(HaveOccurred())

		var n int
		g.Expect(s.DB().QueryRow(`SELECT COUNT(*) FROM sessions`).Scan(&n)).To(Succeed())
		g.Expect(n).To(Equal(2), "the first session is gone, the other two stay")
		_, err = svc.Authenticate(ctx, live.Token)
		g.Expect(err).NotTo(HaveOccurred())
	})
}

func TestLoginRehashesAPasswordStoredWithWeakerParameters(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, _ := newService(s)
		acct, _ := createAccount(t, svc)
		weak := identity.HashWithParamsForTest(password, identity.HashParams{MemoryKiB: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32})
		_, err := s.DB().Exec(s.Rebind(`UPDATE local_accounts SET password_hash = ? WHERE account_id = ?`), weak, acct.AccountID)
		g.Expect(err).NotTo(HaveOccurred())

		_, _, err = svc.Login(ctx, username, password)
		g.Expect(err).NotTo(HaveOccurred(), "the stored parameters are used to verify")
		var hash string
		g.Expect(s.DB().QueryRow(s.Rebind(`SELECT password_hash FROM local_accounts WHERE account_id = ?`), acct.AccountID).Scan(&hash)).To(Succeed())
		g.Expect(hash).To(HavePrefix("$argon2id$v=19$m=19456,t=2,p=1$"))
	})
}

// Every refusal of a login costs the same work, so that its timing does not tell whether the
// username exists or whether its account is locked or disabled: each is at least half as slow as
// the refusal of an unknown username (the fastest of five tries each, to see past the noise of a
// busy machine; a refusal without the password check is about twenty times faster).
func TestLoginRefusalsTakeTheSameWorkWhateverTheAccount(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, _ := newService(s)
		createAccount(t, svc)
		for range identity.DefaultMaxFailedAttempts {
			_, _, err := svc.Login(ctx, username, "Wrong-Password-1")
			g.Expect(err).To(MatchError(identity.ErrInvalidCredentials))
		}
		_, disabled, err := svc.CreateLocalAccount(ctx, "", identity.NewLocalAccount{Username: "grace", Password: password})
		g.Expect(err).NotTo(HaveOccurred())
		acct, err := svc.LocalAccountOf(ctx, disabled.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(svc.Disable(ctx, "", acct.AccountID)).To(Succeed())

		fastest := func(user string, want error) time.Duration {
			best := time.Hour
			for range 5 {
				began := time.Now()
				_, _, err := svc.Login(ctx, user, "Wrong-Password-2")
				best = min(best, time.Since(began))
				g.Expect(err).To(MatchError(want))
			}
			return best
		}
		unknown := fastest("nobody", identity.ErrInvalidCredentials)
		g.Expect(fastest(username, identity.ErrLockedOut)).To(BeNumerically(">=", unknown/2), "a locked account")
		g.Expect(fastest("grace", identity.ErrAccountDisabled)).To(BeNumerically(">=", unknown/2), "a disabled account")
	})
}
