package workplace

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// outboxWriteDuration is the time each transaction takes to number and write its outbox events,
// its wait for the workspace's counter row included: every transaction of a workspace waits for
// that row, so this is where the transactions of one busy workspace queue. It has no labels, so
// its size never grows with the workspaces.
var outboxWriteDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "platform_workplace_outbox_write_seconds",
	Help:    "Time to number and write one transaction's Workplace outbox events, waiting for the workspace's counter included.",
	Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
})

func init() { ctrlmetrics.Registry.MustRegister(outboxWriteDuration) }
