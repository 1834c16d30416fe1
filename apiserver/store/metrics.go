package store

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// commitGroupDuration is the time each shared commit of GroupInTx takes on SQLite, the work of
// its transactions included: one goroutine runs them one group after the other, so the sum over
// time is how busy SQLite's single writer is, and near 1 it is the bound of what the Work plane
// commits. Its count and the count of commitGroupTransactions tell how many transactions share a
// commit.
var commitGroupDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "platform_store_commit_group_seconds",
	Help:    "Time to run and commit one group of transactions that share a commit (SQLite), their work included.",
	Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
})

// commitGroupTransactions is how many transactions each shared commit held.
var commitGroupTransactions = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "platform_store_commit_group_transactions",
	Help:    "Transactions in one group that shares a commit (SQLite).",
	Buckets: prometheus.ExponentialBuckets(1, 2, 8),
})

func init() { ctrlmetrics.Registry.MustRegister(commitGroupDuration, commitGroupTransactions) }
