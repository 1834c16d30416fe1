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

		g.Expect(svc.Logout(ctx, sess.Token)).To(Succeed())
		_, err = svc.Authenticate(ctx, sess.Token)
		g.Expect(err).To(MatchError(identity.ErrUnauthenticated))
		g.Expect(actions(t, svc)).To(Equal([]string{
			"local-account.created success", "local-account.login success", "local-account.logout success"}))
	})
}
