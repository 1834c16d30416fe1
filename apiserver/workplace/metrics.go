package workplace

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// outboxWriteDuration is the time each transaction takes to write its outbox events, its waits for
// the rows it locks included: the unread counts of the Principals it notifies, and on SQLite the
// workspace's counter, which numbers the events (on PostgreSQL NumberOutbox numbers them after the
// commit, so that the transactions of one busy workspace do not queue for that row). It has no
// labels, so its size never grows with the workspaces.
var outboxWriteDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "platform_workplace_outbox_write_seconds",
	Help:    "Time to write one transaction's Workplace outbox events, waiting for the rows it locks (unread counts; on SQLite the workspace's counter) included.",
	Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
})

func init() { ctrlmetrics.Registry.MustRegister(outboxWriteDuration) }
