package store_test

import (
	"context"
	"database/sql"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// The store counts what it runs where the statements reach the database, on both dialects:
// each read and write once, prepared or not, transaction control not at all, each transaction
// of its callers, and the commits, which grouped transactions share on SQLite.
func TestTheStoreCountsItsStatementsTransactionsAndCommits(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		_, err := s.DB().ExecContext(ctx, `CREATE TABLE counted (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`)
		g.Expect(err).NotTo(HaveOccurred())

		before := s.Counts()
		stop := s.RecordStatements()
		insert := s.Rebind(`INSERT INTO counted (id, n) VALUES (?, ?)`)
		g.Expect(s.InTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, insert, 1, 10); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, insert, 2, 20)
			return err
		})).To(Succeed())
		var n int
		g.Expect(s.DB().QueryRowContext(ctx, s.Rebind(`SELECT n FROM counted WHERE id = ?`), 2).Scan(&n)).To(Succeed())
		g.Expect(s.DB().QueryRowContext(ctx, `SELECT count(*) FROM counted`).Scan(&n)).To(Succeed())
		g.Expect(s.GroupInTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, insert, 3, 30)
			return err
		})).To(Succeed())
		recorded := stop()

		// On PostgreSQL a transaction's BEGIN goes with its first statement.
		roundTrips := map[string]int64{store.SQLite: 0, store.Postgres: 3 + 2 + 2}[s.Dialect()]
		g.Expect(s.Counts().Sub(before)).To(Equal(store.Counts{Statements: 5, Transactions: 2, Commits: 2, RoundTrips: roundTrips}))
		g.Expect(recorded).To(Equal([]string{insert, insert, s.Rebind(`SELECT n FROM counted WHERE id = ?`), `SELECT count(*) FROM counted`, insert}))

		// A failed transaction counts its statements and itself, but no commit.
		before = s.Counts()
		g.Expect(s.InTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, insert, 1, 99)
			return err
		})).NotTo(Succeed())
		roundTrips = map[string]int64{store.SQLite: 0, store.Postgres: 2}[s.Dialect()] // its ROLLBACK
		g.Expect(s.Counts().Sub(before)).To(Equal(store.Counts{Statements: 1, Transactions: 1, RoundTrips: roundTrips}))
	})
}

// On SQLite the store counts the executions that the database planned again first: a statement
// comparing a bound value with a partial index's condition is planned again at every execution,
// the same statement with the value written into it never.
func TestTheStoreCountsTheStatementsSQLitePlansAgainAtEachExecution(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		for _, ddl := range []string{`CREATE TABLE kinds (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, ref TEXT NOT NULL)`,
			`CREATE INDEX kinds_ref ON kinds (ref) WHERE kind = 'question'`} {
			_, err := s.DB().ExecContext(ctx, ddl)
			g.Expect(err).NotTo(HaveOccurred())
		}
		count := func(query string, args ...any) int64 {
			before := s.Counts()
			for range 3 {
				var n int
				g.Expect(s.DB().QueryRowContext(ctx, s.Rebind(query), args...).Scan(&n)).To(Succeed())
			}
			return s.Counts().Sub(before).Replans
		}
		bound := count(`SELECT count(*) FROM kinds WHERE ref = ? AND kind = ?`, "r", "question")
		written := count(`SELECT count(*) FROM kinds WHERE ref = ? AND kind = 'question'`, "r")
		if s.Dialect() == store.SQLite {
			g.Expect(bound).To(BeNumerically(">=", 2), "the bound kind's statement was not planned again")
		} else {
			g.Expect(bound).To(BeZero())
		}
		g.Expect(written).To(BeZero())
	})
}
