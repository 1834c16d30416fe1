package store_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// insertProbe inserts the probe row id with ctx (Pipelined or not).
func insertProbe(ctx context.Context, s *store.Store, tx *sql.Tx, id int) error {
	_, err := tx.ExecContext(ctx, s.Rebind(`INSERT INTO probe (id, worker) VALUES (?, ?)`), id, 0)
	return err
}

// oneConnection makes every transaction of s use the same connection, so that a test sees what a
// failed one left on it.
func oneConnection(s *store.Store) {
	s.DB().SetMaxOpenConns(1)
	s.DB().SetMaxIdleConns(1)
}

func TestPipelinedWritesRunInTheOrderIssuedAndTheTransactionsNextStatementSeesThem(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		createProbe(t, s)
		later := store.Pipelined(ctx)
		g.Expect(s.InTx(ctx, func(tx *sql.Tx) error {
			for id := range 3 {
				if err := insertProbe(later, s, tx, id); err != nil {
					return err
				}
			}
			// Each sees the ones before it.
			if _, err := tx.ExecContext(later, s.Rebind(`UPDATE probe SET worker = worker + 1 WHERE id = ?`), 1); err != nil {
				return err
			}
			if _, err := tx.ExecContext(later, s.Rebind(`UPDATE probe SET worker = worker * 10 WHERE id = ?`), 1); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM probe`).Scan(&n); err != nil {
				return err
			}
			g.Expect(n).To(Equal(3), "a read of the transaction sees its pipelined writes")
			if err := insertProbe(later, s, tx, 3); err != nil {
				return err
			}
			// A write that is not pipelined tells its rows, after the pipelined ones.
			res, err := tx.ExecContext(ctx, s.Rebind(`UPDATE probe SET worker = worker + 1 WHERE id <> ?`), 1)
			if err != nil {
				return err
			}
			g.Expect(res.RowsAffected()).To(BeNumerically("==", 3))
			return insertProbe(later, s, tx, 4)
		})).To(Succeed())
		g.Expect(countProbe(t, s)).To(Equal(5))
		var worker int
		g.Expect(s.DB().QueryRow(s.Rebind(`SELECT worker FROM probe WHERE id = ?`), 1).Scan(&worker)).To(Succeed())
		g.Expect(worker).To(Equal(10))
	})
}

func TestAPipelinedWriteThatFailsFailsItsTransactionWhichLeavesNothing(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		createProbe(t, s)
		oneConnection(s)
		later := store.Pipelined(ctx)
		// The second insert of the same row fails (on SQLite at once).
		insertTwice := func(tx *sql.Tx) error {
			if err := insertProbe(later, s, tx, 1); err != nil {
				return err
			}
			return insertProbe(later, s, tx, 1)
		}
		cases := map[string]func(tx *sql.Tx) error{
			// On PostgreSQL the commit reports it.
			"told by the commit": insertTwice,
			// On PostgreSQL the transaction's next statement reports it.
			"told by the next read": func(tx *sql.Tx) error {
				if err := insertTwice(tx); err != nil {
					return err
				}
				var n int
				return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM probe`).Scan(&n)
			},
			"told by the next write": func(tx *sql.Tx) error {
				if err := insertTwice(tx); err != nil {
					return err
				}
				return insertProbe(ctx, s, tx, 2)
			},
		}
		for name, fn := range cases {
			err := s.InTx(ctx, fn)
			g.Expect(err).To(HaveOccurred(), name)
			g.Expect(countProbe(t, s)).To(BeZero(), "%s: nothing of the transaction is applied", name)
		}
		// The connection they used is as good as new.
		g.Expect(s.InTx(ctx, func(tx *sql.Tx) error { return insertProbe(later, s, tx, 7) })).To(Succeed())
		g.Expect(countProbe(t, s)).To(Equal(1))
	})
}

func TestATransactionRolledBackDropsItsPipelinedWrites(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		createProbe(t, s)
		oneConnection(s)
		later := store.Pipelined(ctx)
		boom := errors.New("boom")
		g.Expect(s.InTx(ctx, func(tx *sql.Tx) error {
			if err := insertProbe(later, s, tx, 1); err != nil {
				return err
			}
			return boom
		})).To(MatchError(boom))
		// Rolled back after something was sent as well.
		g.Expect(s.InTx(ctx, func(tx *sql.Tx) error {
			if err := insertProbe(ctx, s, tx, 2); err != nil {
				return err
			}
			if err := insertProbe(later, s, tx, 3); err != nil {
				return err
			}
			return boom
		})).To(MatchError(boom))
		g.Expect(countProbe(t, s)).To(BeZero())
		g.Expect(s.InTx(ctx, func(tx *sql.Tx) error { return insertProbe(later, s, tx, 4) })).To(Succeed())
		g.Expect(countProbe(t, s)).To(Equal(1))
	})
}

// On PostgreSQL a transaction's pipelined writes go with its commit: one round trip where each
// statement, BEGIN and COMMIT took one.
func TestATransactionOfPipelinedWritesWaitsForPostgreSQLOnce(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		if s.Dialect() != store.Postgres {
			t.Skip("SQLite runs in the process: no round trips")
		}
		g := NewWithT(t)
		ctx := context.Background()
		createProbe(t, s)
		later := store.Pipelined(ctx)
		before := s.Counts()
		g.Expect(s.InTx(ctx, func(tx *sql.Tx) error {
			for id := range 4 {
				if err := insertProbe(later, s, tx, id); err != nil {
					return err
				}
			}
			return nil
		})).To(Succeed())
		ran := s.Counts().Sub(before)
		g.Expect(ran.RoundTrips).To(BeNumerically("==", 1))
		g.Expect(ran.Statements).To(BeNumerically("==", 4), "statements sent together count one each")
		g.Expect(countProbe(t, s)).To(Equal(4))

		// A transaction that ran nothing costs none.
		before = s.Counts()
		g.Expect(s.InTx(ctx, func(*sql.Tx) error { return nil })).To(Succeed())
		g.Expect(s.Counts().Sub(before).RoundTrips).To(BeZero())
	})
}
