package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"platform.dev/platform/apiserver/testenv"
)

// BenchmarkCreateCustomResource measures creates of a small Agent in namespace default through
// the dynamic client, from one client and from 16 concurrent clients (each with its own
// connection). One op is one create; ns/op is the inverse of the throughput, creates/s the
// throughput, p50-ms and p99-ms the latency of single requests. One server serves all
// sub-benchmarks, so later runs create into a namespace that already holds earlier runs' objects.
func BenchmarkCreateCustomResource(b *testing.B) {
	env := startEnv(b)
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			benchmarkCreates(b, env, clients)
		})
	}
}

func benchmarkCreates(b *testing.B, env *testenv.Env, clients int) {
	ctx := context.Background()
	resources := make([]dynamic.ResourceInterface, clients)
	for i := range resources {
		client, err := dynamic.NewForConfig(ownConnection(env.Config))
		if err != nil {
			b.Fatal(err)
		}
		resources[i] = client.Resource(agents).Namespace("default")
		// Warm up: the connection's TLS handshake is not part of a create.
		if _, err := resources[i].Create(ctx, newAgent(uniqueName("warmup")), metav1.CreateOptions{}); err != nil {
			b.Fatalf("warm-up create: %v", err)
		}
	}

	var (
		next      atomic.Int64 // ops taken so far
		failed    atomic.Bool
		firstErr  error
		errOnce   sync.Once
		latencies = make([][]time.Duration, clients)
		wg        sync.WaitGroup
	)
	b.ResetTimer()
	start := time.Now()
	for i, resource := range resources {
		wg.Go(func() {
			own := make([]time.Duration, 0, b.N/clients+1)
			for !failed.Load() && next.Add(1) <= int64(b.N) {
				agent := newAgent(uniqueName("a"))
				t0 := time.Now()
				_, err := resource.Create(ctx, agent, metav1.CreateOptions{})
				took := time.Since(t0)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					failed.Store(true)
					return
				}
				own = append(own, took)
			}
			latencies[i] = own
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if firstErr != nil {
		b.Fatalf("create: %v", firstErr)
	}

	var all []time.Duration
	for _, l := range latencies {
		all = append(all, l...)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "creates/s")
	reportLatencies(b, all)
}
