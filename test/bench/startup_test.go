package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"platform.dev/platform/apiserver/testenv"
)

// BenchmarkStartToReady measures one testenv.Start: a fresh data directory, certificates,
// embedded etcd and the kube API, until the server reports ready (storage reachable, system
// namespaces created, built-in CRDs Established). Stopping the server is not timed.
//
// The first start in a process also pays one-time initialization (package-level caches, the
// first use of CEL and OpenAPI machinery...). An untimed start before the first timed one keeps
// that out, so every op is a warm start and the result does not depend on how many ops the
// benchtime allows; the cold start is logged.
func BenchmarkStartToReady(b *testing.B) {
	skipOnExistingCluster(b)
	coldStartOnce.Do(func() {
		var took time.Duration
		if took, coldStartErr = timeStartStop(); coldStartErr == nil {
			b.Logf("first (cold) start in this process, not timed: %.3fs", took.Seconds())
		}
	})
	if coldStartErr != nil {
		b.Fatal(coldStartErr)
	}
	b.ResetTimer()

	var started time.Duration
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		t0 := time.Now()
		env, err := testenv.Start(ctx, testenv.Options{})
		started += time.Since(t0)
		cancel()
		if err != nil {
			b.Fatalf("start control plane: %v", err)
		}
		b.StopTimer()
		if err := env.Stop(); err != nil {
			b.Fatalf("stop control plane: %v", err)
		}
		b.StartTimer()
	}
	b.ReportMetric(started.Seconds()/float64(b.N), "s/start")
}

var (
	coldStartOnce sync.Once
	coldStartErr  error
)

// timeStartStop starts and stops a control plane and returns how long the start took.
func timeStartStop() (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	t0 := time.Now()
	env, err := testenv.Start(ctx, testenv.Options{})
	took := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("start control plane: %w", err)
	}
	if err := env.Stop(); err != nil {
		return 0, fmt.Errorf("stop control plane: %w", err)
	}
	return took, nil
}
