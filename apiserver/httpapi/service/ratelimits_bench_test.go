package service_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
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
// replica takes of the store's count), reads its Agents one request after the other.
//
// The flood comes from a child process (floodChild), so that its client's CPU and garbage are not
// counted as the server's: flood-cores is the CPU the flood client used, cores the test process's
// (the server and the calm client), host-cores the machine's. hot-rps is what the flood reached,
// hot-429/s how much of it the limit refused.
//
// p50-x-quiet and p99-x-quiet are a measure's p50 and p99 over those of every "quiet" measure of
// the run pooled (-count): "quiet-again", the same quiet client measured again after the flood,
// says how far two quiet measures differ on this machine (the noise) beside the flood's.
// p99-past-burst-x-quiet is the flood's p99 of the reads that began after the first 250 ms of
// their second, when the hot token's admitted requests (its limit's 100, which arrive first in
// each window) are served: what the refusals alone cost the calm workspace.
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
		// The calm client keeps its connection, as an SDK does: the measure is the server's, not
		// the dialling's.
		calmTransport := http.DefaultTransport.(*http.Transport).Clone()
		calmTransport.MaxIdleConnsPerHost = 1
		calmClient := &http.Client{Transport: calmTransport}
		b.Cleanup(calmClient.CloseIdleConnections)
		// The first reads of a workspace warm what it reads (its namespace, the connection): they
		// are no measure of the flood.
		for range 20 {
			floodRead(calmClient, server.URL, calm)
		}
		rawCommits := rawCommitsNow(b, s)
		// quiet are the calm client's latencies of every quiet measure so far, latest those of the
		// last measure.
		var quiet, latest []time.Duration
		// pastBurst are the latencies of the last measure's reads that began after the first
		// burstWindow of their second: the hot token's 100 admitted requests arrive at the start
		// of each second's window, and they are work the limit allows, not refusals.
		var pastBurst []time.Duration
		const burstWindow = 250 * time.Millisecond
		calmReads := func(b *testing.B) {
			latest, pastBurst = make([]time.Duration, 0, b.N), pastBurst[:0]
			measureClients(b, s, rawCommits, 1, "calm-requests/s", func() bool {
				began := time.Now()
				if status := floodRead(calmClient, server.URL, calm); status != http.StatusOK {
					b.Errorf("the calm workspace's read: %d", status)
					return false
				}
				took := time.Since(began)
				latest = append(latest, took)
				if time.Duration(began.UnixNano())%time.Second >= burstWindow {
					pastBurst = append(pastBurst, took)
				}
				return true
			})
		}
		overQuiet := func(b *testing.B) {
			if len(quiet) > 0 && len(latest) > 0 {
				b.ReportMetric(quantile(latest, 0.50)/quantile(quiet, 0.50), "p50-x-quiet")
				b.ReportMetric(quantile(latest, 0.99)/quantile(quiet, 0.99), "p99-x-quiet")
			}
		}
		b.Run("quiet", func(b *testing.B) {
			calmReads(b)
			quiet = append(quiet, latest...)
			overQuiet(b)
		})
		b.Run("hot-token-1000rps", func(b *testing.B) {
			flood := startFlood(b, server.URL, hot)
			time.Sleep(200 * time.Millisecond) // the flood is under way before the measure
			began, before := time.Now(), flood.mark(b)
			calmReads(b)
			after, elapsed := flood.mark(b), time.Since(began).Seconds()
			flood.stop(b)
			b.ReportMetric(float64(after.sent-before.sent)/elapsed, "hot-rps")
			b.ReportMetric(float64(after.limited-before.limited)/elapsed, "hot-429/s")
			b.ReportMetric((after.cpu-before.cpu).Seconds()/elapsed, "flood-cores")
			overQuiet(b)
			if len(quiet) > 0 && len(pastBurst) > 0 {
				b.ReportMetric(quantile(pastBurst, 0.99)/quantile(quiet, 0.99), "p99-past-burst-x-quiet")
			}
		})
		b.Run("quiet-again", func(b *testing.B) {
			calmReads(b)
			overQuiet(b)
		})
	})
}

// floodRead reads the Agents of token's workspace and answers the status (0 when the request
// failed).
func floodRead(c *http.Client, url, token string) int {
	req, _ := http.NewRequest(http.MethodGet, url+"/api/agents", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// The environment that makes the test binary a flood client (floodChild) instead of the tests.
const (
	floodURLEnv   = "PLATFORM_BENCH_FLOOD_URL"
	floodTokenEnv = "PLATFORM_BENCH_FLOOD_TOKEN"
)

// floodCounts are what a flood client sent so far, how much of it was refused with 429, and the
// CPU time the client used.
type floodCounts struct {
	sent, limited int64
	cpu           time.Duration
}

// flood is a flood client running in a child process: each line written to it asks for its
// floodCounts; closing its input stops it.
type flood struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// startFlood starts a child process that sends 1,000 requests a second with token to url.
func startFlood(b *testing.B, url, token string) *flood {
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), floodURLEnv+"="+url, floodTokenEnv+"="+token)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	f := &flood{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	b.Cleanup(func() { f.stop(b) })
	return f
}

func (f *flood) mark(b *testing.B) floodCounts {
	var c floodCounts
	var cpu int64
	if _, err := io.WriteString(f.in, "mark\n"); err != nil {
		b.Fatalf("flood client: %v", err)
	}
	if !f.out.Scan() {
		b.Fatalf("flood client: no answer: %v", f.out.Err())
	}
	if _, err := fmt.Sscan(f.out.Text(), &c.sent, &c.limited, &cpu); err != nil {
		b.Fatalf("flood client: %q: %v", f.out.Text(), err)
	}
	c.cpu = time.Duration(cpu)
	return c
}

func (f *flood) stop(b *testing.B) {
	if f.cmd.ProcessState != nil {
		return
	}
	f.in.Close()
	if err := f.cmd.Wait(); err != nil {
		b.Errorf("flood client: %v", err)
	}
}

// floodChild runs the flood client when the environment asks for it (startFlood) and answers
// true when it did: 1,000 requests a second, each on its own goroutine, at most 256 at once over
// connections kept open as an SDK keeps them (a request that would wait for a 257th is skipped,
// and hot-rps says what was reached), until its input ends. 256, not fewer: the admitted
// requests the server paces wait up to a second, and must not hold back the flood's refused ones.
func floodChild() bool {
	url, token := os.Getenv(floodURLEnv), os.Getenv(floodTokenEnv)
	if url == "" {
		return false
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 256
	client := &http.Client{Transport: transport}
	var sent, limited atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	slots := make(chan struct{}, 256)
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
						if floodRead(client, url, token) == http.StatusTooManyRequests {
							limited.Add(1)
						}
						sent.Add(1)
					})
				default:
				}
			}
		}
	})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var usage syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
		fmt.Println(sent.Load(), limited.Load(), usage.Utime.Nano()+usage.Stime.Nano())
	}
	close(stop)
	wg.Wait()
	return true
}

// quantile is the q quantile of latencies, in milliseconds.
func quantile(latencies []time.Duration, q float64) float64 {
	sorted := slices.Sorted(slices.Values(latencies))
	return float64(sorted[min(len(sorted)-1, int(q*float64(len(sorted))))].Microseconds()) / 1000
}
