package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/packs"
	"platform.dev/platform/apiserver/packs/packstest"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/controllers"
)

// packBenchResources is the size of the benchmarked Pack.
const packBenchResources = 100

// BenchmarkPackInstall100 measures, with the platform's controller manager running, the time
// from an InstalledPack naming a stored 100-resource archive to its operation done (every
// resource applied and journaled one step at a time), one install at a time in a fresh
// workspace; p50/p99 over all ops, and resources installed per second.
func BenchmarkPackInstall100(b *testing.B) {
	env := startEnv(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := store.Open(ctx, store.Options{DataDir: filepath.Join(b.TempDir())})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	archives := &packs.Store{DB: db}
	mgr, err := controllers.NewManager(env.Platform, controllers.Options{PackArchives: archives})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
	kube, err := client.New(env.Config, client.Options{Scheme: platformscheme.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	p := packstest.Agents("bench", "agents", "1.0.0", packBenchResources, "Answer briefly.")
	digest, err := archives.PutArchive(ctx, p.Zip())
	if err != nil {
		b.Fatal(err)
	}
	install := func() (time.Duration, error) {
		namespace := createNamespace(b, env)
		now := metav1.Now()
		ip := &platformv1.InstalledPack{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "bench.agents"},
			Definition: platformv1.InstalledPackDefinition{Publisher: "bench", Name: "agents", Version: "1.0.0",
				Source: platformv1.PackSource{Kind: platformv1.UploadPackSource, Digest: digest}, ArchiveDigest: digest, RequestedAt: &now}}
		start := time.Now()
		if err := kube.Create(ctx, ip); err != nil {
			return 0, err
		}
		deadline := time.Now().Add(5 * time.Minute)
		for time.Now().Before(deadline) {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(ip), ip); err != nil {
				return 0, err
			}
			if op := ip.Status.Operation; op != nil && op.Phase == platformv1.PackOperationDone {
				if n := len(ip.Status.Resources); n != packBenchResources {
					return 0, fmt.Errorf("installed %d resources, want %d", n, packBenchResources)
				}
				return time.Since(start), nil
			} else if op != nil && op.Phase == platformv1.PackOperationFailed {
				return 0, fmt.Errorf("install failed: %s", op.Error)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return 0, fmt.Errorf("install not done within 5 minutes")
	}
	// A sub-benchmark, so that the manager above is built once whatever b.N go chooses.
	b.Run("install", func(b *testing.B) {
		var latencies []time.Duration
		var total time.Duration
		for range b.N {
			elapsed, err := install()
			if err != nil {
				b.Fatal(err)
			}
			latencies = append(latencies, elapsed)
			total += elapsed
		}
		reportLatencies(b, latencies)
		b.ReportMetric(float64(packBenchResources*b.N)/total.Seconds(), "resources/s")
	})
}
