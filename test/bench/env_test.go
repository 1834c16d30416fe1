package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"platform.dev/platform/apiserver/testenv"
)

// startTimeout bounds one control plane start; a healthy one takes seconds.
const startTimeout = 3 * time.Minute

// agents is the built-in Agent CRD's resource: small, namespaced, always Established once the
// control plane reports ready.
var agents = schema.GroupVersionResource{Group: "platform.dev", Version: "v1", Resource: "agents"}

// runID keeps object names unique across benchmark runs.
var runID = strconv.FormatInt(time.Now().UnixNano(), 36)

var nameSeq atomic.Int64

// uniqueName is a fresh DNS-1123 name with the given prefix.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%s-%d", prefix, runID, nameSeq.Add(1))
}

// startEnv boots a control plane for the whole (parent) benchmark and stops it when the
// benchmark and its sub-benchmarks are done. The benchmarks measure the in-process control
// plane; with PLATFORM_TEST_KUBECONFIG set they are skipped rather than run against (and leave
// thousands of objects in) that cluster.
func startEnv(b *testing.B) *testenv.Env {
	b.Helper()
	skipOnExistingCluster(b)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		b.Fatalf("start control plane: %v", err)
	}
	b.Cleanup(func() {
		if err := env.Stop(); err != nil {
			b.Errorf("stop control plane: %v", err)
		}
	})
	return env
}

// ownConnection copies config so that a client built from it gets its own transport, and so
// its own TCP/TLS connection, instead of client-go's transport shared by equal configs: a
// non-nil Proxy makes the transport uncacheable. This proxy function sends nothing through a
// proxy.
func ownConnection(config *rest.Config) *rest.Config {
	c := rest.CopyConfig(config)
	c.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	return c
}

// newAgent is a small Agent as a user would write it.
func newAgent(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "platform.dev/v1",
		"kind":       "Agent",
		"metadata":   map[string]any{"name": name},
		"definition": map[string]any{"displayName": "bench " + name},
	}}
}

// agentManifest is newAgent's object as a YAML file for kubectl.
func agentManifest(name string) []byte {
	return fmt.Appendf(nil, `apiVersion: platform.dev/v1
kind: Agent
metadata:
  name: %s
definition:
  displayName: bench %s
`, name, name)
}

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted, 0 when it is empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// reportLatencies reports the p50 and p99 of latencies in milliseconds.
func reportLatencies(b *testing.B, latencies []time.Duration) {
	slices.Sort(latencies)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(latencies, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(latencies, 99)), "p99-ms")
}

// skipOnExistingCluster skips b when testenv would connect to PLATFORM_TEST_KUBECONFIG's
// cluster instead of booting one.
func skipOnExistingCluster(b *testing.B) {
	b.Helper()
	if os.Getenv(testenv.ExistingClusterEnv) != "" {
		b.Skipf("%s is set: these benchmarks measure the in-process control plane", testenv.ExistingClusterEnv)
	}
}
