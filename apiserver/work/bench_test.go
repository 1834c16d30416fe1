package work_test

import (
	"context"
	"database/sql"
	"testing"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/work"
)

// BenchmarkRawCommit is the ceiling the Work benchmarks are measured against: one single-row
// INSERT committed per operation (on SQLite, WAL with synchronous=FULL: one fsync per commit).
func BenchmarkRawCommit(b *testing.B) {
	storetest.ForEachDialectBench(b, func(b *testing.B, s *store.Store) {
		ctx := context.Background()
		if _, err := s.DB().ExecContext(ctx, `CREATE TABLE bench_commits (id BIGINT PRIMARY KEY)`); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			if err := s.InTx(ctx, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, s.Rebind(`INSERT INTO bench_commits (id) VALUES (?)`), i)
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	})
}

// BenchmarkSubmit is the store's share of a submission: a WorkItem, its FlowRun and the first
// event, in one transaction.
func BenchmarkSubmit(b *testing.B) {
	storetest.ForEachDialectBench(b, func(b *testing.B, s *store.Store) {
		w := work.New(s)
		b.ResetTimer()
		for range b.N {
			if _, _, _, err := w.Submit(context.Background(), work.Submission{Context: wsA, Type: "t", Title: "t", Instruction: "i",
				FlowName: "f", FlowVersion: "1.0.0", Input: map[string]any{"instruction": "i"}}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "submits/s")
	})
}
