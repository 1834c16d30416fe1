package identity_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// allCells returns every column of every row of table as text.
func allCells(t *testing.T, s *store.Store, table string) []string {
	t.Helper()
	rows, err := s.DB().Query(`SELECT * FROM ` + table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var cells []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			cells = append(cells, fmt.Sprint(v))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return cells
}

func TestSessionTokensAreStoredOnlyAsDigests(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		svc, _ := newService(s)
		createAccount(t, svc)
		sess, _, err := svc.Login(ctx, username, password)
		g.Expect(err).NotTo(HaveOccurred())

		cells := strings.Join(allCells(t, s, "sessions"), "\n")
		g.Expect(cells).NotTo(ContainSubstring(sess.Token))
		digest := sha256.Sum256([]byte(sess.Token))
		var id string
		g.Expect(s.DB().QueryRow(`SELECT id FROM sessions`).Scan(&id)).To(Succeed())
		g.Expect(id).To(Equal(hex.EncodeToString(digest[:])))
	})
}

func TestAuditRecordsHaveTheSpecActionNamesAndNeverHoldUsernamesPasswordsOrTokens(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := identity.WithCorrelationID(context.Background(), "trace-0123")
		svc, _ := newService(s)
		acct, p := createAccount(t, svc)
		_, _, err := svc.Login(ctx, username, "Wrong-"+password)
		g.Expect(err).To(HaveOccurred())
		_, _, err = svc.Login(ctx, "someone-else", password)
		g.Expect(err).To(HaveOccurred())
		sess, _, err := svc.Login(ctx, username, password)
		g.Expect(err).NotTo(HaveOccurred())
		const next = "Difference-Engine-1822"
		fresh, err := svc.ChangePassword(ctx, acct.AccountID, password, next)
		g.Expect(err).NotTo(HaveOccurred())
		again, err := svc.RevokeOtherSessions(ctx, acct.AccountID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(svc.Logout(ctx, again.Token)).To(Succeed())
		g.Expect(svc.Disable(ctx, "admin-principal", acct.AccountID)).To(Succeed())
		g.Expect(svc.Enable(ctx, "admin-principal", acct.AccountID)).To(Succeed())

		g.Expect(actions(t, svc)).To(Equal([]string{
			"local-account.created success",
			"local-account.login failure",
			"local-account.login failure",
			"local-account.login success",
			"local-account.password-changed success",
			"local-account.sessions-revoked success",
			"local-account.logout success",
			"local-account.disabled success",
			"local-account.enabled success",
		}))
		events, err := svc.Audit.Latest(ctx, 0)
		g.Expect(err).NotTo(HaveOccurred())
		for _, e := range events {
			g.Expect(e.TargetID).To(BeElementOf(p.ID, ""), e.Action)
			g.Expect(e.ID).NotTo(BeEmpty())
			g.Expect(e.OccurredAt.IsZero()).To(BeFalse())
		}
		g.Expect(events[0].CorrelationID).To(Equal("trace-0123"))

		secrets := []string{username, strings.ToLower(username), "someone-else", "ada@example.test",
			password, "Wrong-" + password, next, sess.Token, fresh.Token, again.Token}
		for _, cell := range allCells(t, s, "audit_events") {
			for _, secret := range secrets {
				g.Expect(strings.ToLower(cell)).NotTo(ContainSubstring(strings.ToLower(secret)))
			}
		}
	})
}

func TestAuditEventsAreAppendOnly(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		a := &identity.Audit{Store: s}
		g.Expect(s.InTx(ctx, func(tx *sql.Tx) error {
			return a.Record(ctx, tx, identity.Event{Action: identity.ActionLocalAccountLogout, Outcome: identity.OutcomeSuccess, ActorID: "p1"})
		})).To(Succeed())
		_, err := s.DB().Exec(`UPDATE audit_events SET outcome = 'failure'`)
		g.Expect(err).To(MatchError(ContainSubstring("append-only")))
		_, err = s.DB().Exec(`DELETE FROM audit_events`)
		g.Expect(err).To(MatchError(ContainSubstring("append-only")))

		err = s.InTx(ctx, func(tx *sql.Tx) error {
			return a.Record(ctx, tx, identity.Event{Action: "local-account.deleted", Outcome: identity.OutcomeSuccess})
		})
		g.Expect(err).To(MatchError(ContainSubstring("unknown action")))
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			return a.Record(ctx, tx, identity.Event{Action: identity.ActionLocalAccountLogin, Outcome: identity.OutcomeFailure, ReasonCode: "user ada typed x"})
		})
		g.Expect(err).To(MatchError(ContainSubstring("reason code")))
	})
}

func TestAuditRecordRollsBackWithItsTransaction(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		a := &identity.Audit{Store: s}
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			if err := a.Record(ctx, tx, identity.Event{Action: identity.ActionLocalAccountCreated, Outcome: identity.OutcomeSuccess}); err != nil {
				return err
			}
			return fmt.Errorf("the change failed")
		})
		g.Expect(err).To(HaveOccurred())
		events, err := a.Latest(ctx, 10)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(events).To(BeEmpty())
	})
}

func TestAuditLatestIsNewestFirstAndCappedAt200(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		a := &identity.Audit{Store: s}
		g.Expect(s.InTx(ctx, func(tx *sql.Tx) error {
			for i := range 250 {
				if err := a.Record(ctx, tx, identity.Event{Action: identity.ActionLocalAccountLogin, Outcome: identity.OutcomeSuccess,
					ActorID: fmt.Sprintf("p%d", i), OccurredAt: start.Add(time.Duration(i) * time.Second)}); err != nil {
					return err
				}
			}
			return nil
		})).To(Succeed())

		for _, limit := range []int{0, -1, 201, 1000} {
			events, err := a.Latest(ctx, limit)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(events).To(HaveLen(identity.MaxAuditRead), "limit %d", limit)
			g.Expect(events[0].ActorID).To(Equal("p249"))
			g.Expect(events[199].ActorID).To(Equal("p50"))
			g.Expect(events[0].OccurredAt.Equal(start.Add(249 * time.Second))).To(BeTrue())
		}
		events, err := a.Latest(ctx, 3)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(events).To(HaveLen(3))
		g.Expect([]string{events[0].ActorID, events[1].ActorID, events[2].ActorID}).To(Equal([]string{"p249", "p248", "p247"}))
	})
}
