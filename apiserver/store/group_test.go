package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// Concurrent transactions that share a commit each keep their own outcome: those that succeed
// are all durable, one that fails leaves nothing behind and fails alone, and one whose caller
// went away does not take the others down.
func TestTransactionsSharingACommitKeepTheirOwnOutcome(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		_, err := s.DB().ExecContext(ctx, `CREATE TABLE grouped (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`)
		g.Expect(err).NotTo(HaveOccurred())
		groupedBefore := groupedTransactions(t)
		refused := errors.New("refused")
		gone, cancel := context.WithCancel(ctx)
		cancel()
		var wg sync.WaitGroup
		errs := make([]error, 200)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				callerCtx := ctx
				if i%50 == 7 {
					callerCtx = gone
				}
				errs[i] = s.GroupInTx(callerCtx, func(tx *sql.Tx) error {
					if _, err := tx.ExecContext(callerCtx, s.Rebind(`INSERT INTO grouped (id, n) VALUES (?, ?)`), i, i); err != nil {
						return err
					}
					if i%10 == 3 {
						return refused
					}
					return nil
				})
			}()
		}
		wg.Wait()
		want := 0
		for i, err := range errs {
			switch {
			case i%50 == 7:
				g.Expect(err).To(HaveOccurred(), "transaction %d", i)
			case i%10 == 3:
				g.Expect(err).To(MatchError(refused), "transaction %d", i)
			default:
				g.Expect(err).NotTo(HaveOccurred(), "transaction %d", i)
				want++
			}
		}
		var n int
		var ids []int
		rows, err := s.DB().QueryContext(ctx, `SELECT id FROM grouped ORDER BY id`)
		g.Expect(err).NotTo(HaveOccurred())
		for rows.Next() {
			var id int
			g.Expect(rows.Scan(&id)).To(Succeed())
			ids = append(ids, id)
			g.Expect(id%10 == 3 || id%50 == 7).To(BeFalse(), fmt.Sprintf("row %d of a failed transaction was kept", id))
		}
		g.Expect(rows.Close()).To(Succeed())
		n = len(ids)
		g.Expect(n).To(Equal(want))

		// platform_store_commit_group_transactions counts each transaction in the group it was in.
		grouped := groupedTransactions(t) - groupedBefore
		if s.Dialect() == store.SQLite {
			g.Expect(grouped).To(BeEquivalentTo(len(errs)))
		} else {
			g.Expect(grouped).To(BeZero(), "PostgreSQL commits each transaction on its own")
		}
	})
}

// groupedTransactions is the sum of platform_store_commit_group_transactions so far.
func groupedTransactions(t *testing.T) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "platform_store_commit_group_transactions" {
			return f.GetMetric()[0].GetHistogram().GetSampleSum()
		}
	}
	t.Fatal("platform_store_commit_group_transactions is not registered")
	return 0
}
