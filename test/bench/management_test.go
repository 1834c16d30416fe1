package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/internal/apply"
	"platform.dev/platform/internal/config"
)

// BenchmarkAgentCreates1000 measures creating 1,000 Agents through the service API (POST
// /api/agents over HTTP, one request at a time, p50/p99 of one create) and through `platform
// apply` of a folder of 1,000 manifests (in-process, its default concurrency). Compare with
// BenchmarkKubectlApply1000, which applies the same manifests with kubectl.
func BenchmarkAgentCreates1000(b *testing.B) {
	env := startEnv(b)

	b.Run("api", func(b *testing.B) {
		// The service API writes as in `platform serve`: a privileged user held to admission.
		kube, err := client.New(env.ServiceAPI, client.Options{Scheme: platformscheme.Scheme})
		if err != nil {
			b.Fatal(err)
		}
		api, err := service.New(httpapi.Options{
			Config: config.FromMap(config.Testing, map[string]string{"Platform:Authentication:Mode": "Development"}),
			Kube:   kube, Ready: env.Server().Ready,
		})
		if err != nil {
			b.Fatal(err)
		}
		server := httptest.NewServer(api.Handler())
		defer server.Close()
		var latencies []time.Duration
		var creating time.Duration
		for range b.N {
			b.StopTimer()
			namespace := createNamespace(b, env)
			b.StartTimer()
			for range applyManifests {
				name := uniqueName("api")
				body := fmt.Sprintf(`{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":%q},"definition":{"displayName":"bench %s"}}`, name, name)
				req, _ := http.NewRequest(http.MethodPost, server.URL+"/api/agents", bytes.NewBufferString(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(httpapi.WorkspaceHeader, namespace)
				t0 := time.Now()
				resp, err := http.DefaultClient.Do(req)
				elapsed := time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					b.Fatalf("create: %s", resp.Status)
				}
				latencies = append(latencies, elapsed)
				creating += elapsed
			}
		}
		b.ReportMetric(float64(applyManifests*b.N)/creating.Seconds(), "creates/s")
		reportLatencies(b, latencies)
	})

	b.Run("platform-apply", func(b *testing.B) {
		dir := filepath.Join(b.TempDir(), "agents")
		if err := writeAgentManifests(dir, applyManifests); err != nil {
			b.Fatal(err)
		}
		mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(env.Kube.Discovery()))
		var applying time.Duration
		for range b.N {
			b.StopTimer()
			namespace := createNamespace(b, env)
			b.StartTimer()
			t0 := time.Now()
			err := apply.Run(context.Background(), apply.Options{
				Paths: []string{dir}, Namespace: namespace, Dynamic: env.Dynamic, Mapper: mapper,
				Out: io.Discard, Err: io.Discard,
			})
			applying += time.Since(t0)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			checkAgentCount(b, env, namespace, applyManifests)
			b.StartTimer()
		}
		b.ReportMetric(applying.Seconds()/float64(b.N), "s/apply")
		b.ReportMetric(float64(applyManifests*b.N)/applying.Seconds(), "manifests/s")
	})
}
