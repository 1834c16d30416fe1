package service_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/ratelimit"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/internal/config"
)

// BenchmarkAHotTokenLeavesAnotherWorkspaceAlone: one access token floods its workspace with 1,000
// requests a second (its limit is 100 a second, so most are refused with 429, from memory) while a
// client of another workspace, itself limited (its requests are counted, from the leases its
// replica takes of the store's count), reads its Agents one request after the other; its p50 and
// p99 are reported beside the same client's without the flood. hot-rps is what the flood reached, hot-429/s how
// much of it the limit refused.
// p50-x-quiet and p99-x-quiet are the flood's p50 and p99 over the quiet ones of the same run.
func BenchmarkAHotTokenLeavesAnotherWorkspaceAlone(b *testing.B) {
	storetest.ForEachDialectBench(b, func(b *testing.B, s *store.Store) {
		svc := identity.New(s)
		api, err := service.New(httpapi.Options{Config: config.FromMap(config.Production, nil), Kube: kube, PlatformKube: platformKube,
			Ready: func(ctx context.Context) error { return env.Server().Ready(ctx) }, Identity: svc, ProvisionWorkspace: httpapi.NamespaceProvisioner(kube),
			RateLimits: &ratelimit.Counter{DB: s}})
		if err != nil {
			b.Fatal(err)
		}
		server := httptest.NewServer(api.Handler())
		b.Cleanup(server.Close)
		hotWS, calmWS := uniqueWorkspace("hot"), uniqueWorkspace("calm")
		r := call(b, server, http.MethodPost, "/api/auth/bootstrap", bootstrapBody(hotWS, adminPassword))
		if r.status != http.StatusCreated {
			b.Fatalf("bootstrap: %d %v", r.status, r.body)
		}
		session := withCookie(sessionFrom(NewWithT(b), r))
		created := call(b, server, http.MethodPost, "/api/identity/workspaces", `{"name":"`+calmWS+`","displayName":"Calm"}`, append(session, "X-Platform-Workspace", hotWS)...)
		if created.status != http.StatusCreated {
			b.Fatalf("workspace: %d %v", created.status, created.body)
		}
		token := func(ws string) string {
			r := call(b, server, http.MethodPost, "/api/identity/pat", patRequest(ws, []string{"resources/read"}, nil), session...)
			if r.status != http.StatusCreated {
				b.Fatalf("PAT: %d %v", r.status, r.body)
			}
			return r.body["token"].(string)
		}
		hot, calm := token(hotWS), token(calmWS)
		annotateWorkspace(b, hotWS, map[string]string{ratelimit.TokenRequestsPerSecondAnnotation: "100"})
		annotateWorkspace(b, calmWS, map[string]string{ratelimit.RequestsPerSecondAnnotation: "100000"})
		// Each client keeps its connections, as an SDK does: the flood's 64 at once do not make
		// the calm client dial again, and the measure is the server's, not the dialling's.
		clientOf := func(conns int) *http.Client {
			t := http.DefaultTransport.(*http.Transport).Clone()
			t.MaxIdleConnsPerHost = conns
			return &http.Client{Transport: t}
		}
		hotClient, calmClient := clientOf(64), clientOf(1)
		b.Cleanup(hotClient.CloseIdleConnections)
		b.Cleanup(calmClient.CloseIdleConnections)
		read := func(c *http.Client, token string) int {
			req, _ := http.NewRequest(http.MethodGet, server.URL+"/api/agents", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := c.Do(req)
			if err != nil {
				return 0
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
		rawCommits := rawCommitsNow(b, s)
		// The calm client's latencies of the last measure, for the ratio of the flood's to the
		// quiet ones.
		var quiet, latest []time.Duration
		calmReads := func(b *testing.B) {
			latest = make([]time.Duration, 0, b.N)
			measureClients(b, s, rawCommits, 1, "calm-requests/s", func() bool {
				began := time.Now()
				if status := read(calmClient, calm); status != http.StatusOK {
					b.Errorf("the calm workspace's read: %d", status)
					return false
				}
				latest = append(latest, time.Since(began))
				return true
			})
		}
		b.Run("quiet", func(b *testing.B) {
			calmReads(b)
			quiet = latest
		})
		b.Run("hot-token-1000rps", func(b *testing.B) {
			var sent, limited atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			// 1,000 requests a second, each on its own goroutine (at most 64 at once: a request
			// that would wait for one is skipped, and hot-rps says what was reached).
			slots := make(chan struct{}, 64)
			wg.Go(func() {
				tick := time.NewTicker(time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						select {
						case slots <- struct{}{}:
							wg.Go(func() {
								defer func() { <-slots }()
								if read(hotClient, hot) == http.StatusTooManyRequests {
									limited.Add(1)
								}
								sent.Add(1)
							})
						default:
						}
					}
				}
			})
			time.Sleep(200 * time.Millisecond) // the flood is under way before the measure
			began, before, limitedBefore := time.Now(), sent.Load(), limited.Load()
			calmReads(b)
			elapsed := time.Since(began).Seconds()
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(sent.Load()-before)/elapsed, "hot-rps")
			b.ReportMetric(float64(limited.Load()-limitedBefore)/elapsed, "hot-429/s")
			if len(quiet) > 0 && len(latest) > 0 {
				b.ReportMetric(quantile(latest, 0.50)/quantile(quiet, 0.50), "p50-x-quiet")
				b.ReportMetric(quantile(latest, 0.99)/quantile(quiet, 0.99), "p99-x-quiet")
			}
		})
	})
}

// quantile is the q quantile of latencies, in milliseconds.
func quantile(latencies []time.Duration, q float64) float64 {
	sorted := slices.Sorted(slices.Values(latencies))
	return float64(sorted[min(len(sorted)-1, int(q*float64(len(sorted))))].Microseconds()) / 1000
}
