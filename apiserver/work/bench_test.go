package work_test

import (
	"context"
	"testing"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/work"
)

// BenchmarkRawCommit is the ceiling the Work benchmarks are measured against: one single-row
// INSERT committed per operation (on SQLite, WAL with synchronous=FULL: one fsync per commit).
func BenchmarkRawCommit(b *testing.B) {
	storetest.ForEachDialectBench(b, storetest.BenchRawCommits)
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
