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
	"strconv"
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
// requests a second while a client of another workspace, itself limited (its requests are
// counted, from the leases its replica takes of the store's count), reads its Agents one request
// after the other. The service reads namespaces from informers, as `platform serve` does.
//
// A token's limit decides what of the flood is admitted, and admitted requests are work like any
// other: "hot-token-at-its-limit" is the 100-a-second token sending 100 a second (never refused),
// the load its limit allows; "hot-token-1000rps" the same token sending 1,000 (900 refused from
// memory, 429); "hot-token-1000rps-limit-20" a token limited to 20 a second sending 1,000.
//
// The floods come from a child process (floodChild), so that its client's CPU and garbage are not
// counted as the server's: flood-cores is the CPU the flood client used, cores the test process's
// (the server and the calm client), host-cores the machine's. hot-rps is what the flood reached,
// hot-429/s how much of it the limit refused.
//
// p50-x-quiet and p99-x-quiet are a measure's p50 and p99 over those of every "quiet" measure of
// the run pooled (-count): "quiet-again", the same quiet client measured again after the floods,
// says how far two quiet measures differ on this machine (the noise) beside the floods'.
// p99-x-at-limit is the 1,000-a-second flood's p99 over the at-its-limit measure's (pooled):
// what the 900 refused requests a second cost beyond the 100 the limit admits.
func BenchmarkAHotTokenLeavesAnotherWorkspaceAlone(b *testing.B) {
	storetest.ForEachDialectBench(b, func(b *testing.B, s *store.Store) {
		svc := identity.New(s)
		api, err := service.New(httpapi.Options{Config: config.FromMap(config.Production, nil), Kube: kube, PlatformKube: platformKube, Reads: benchReads(b),
			Ready: func(ctx context.Context) error { return env.Server().Ready(ctx) }, Identity: svc, ProvisionWorkspace: httpapi.NamespaceProvisioner(kube),
			RateLimits: &ratelimit.Counter{DB: s}})
		if err != nil {
			b.Fatal(err)
		}
		server := httptest.NewServer(api.Handler())
		b.Cleanup(server.Close)
		hotWS, hot20WS, calmWS := uniqueWorkspace("hot"), uniqueWorkspace("hot20"), uniqueWorkspace("calm")
		r := call(b, server, http.MethodPost, "/api/auth/bootstrap", bootstrapBody(hotWS, adminPassword))
		if r.status != http.StatusCreated {
			b.Fatalf("bootstrap: %d %v", r.status, r.body)
		}
		session := withCookie(sessionFrom(NewWithT(b), r))
		for _, ws := range []string{calmWS, hot20WS} {
			created := call(b, server, http.MethodPost, "/api/identity/workspaces", `{"name":"`+ws+`","displayName":"`+ws+`"}`, append(session, "X-Platform-Workspace", hotWS)...)
			if created.status != http.StatusCreated {
				b.Fatalf("workspace: %d %v", created.status, created.body)
			}
		}
		token := func(ws string) string {
			r := call(b, server, http.MethodPost, "/api/identity/pat", patRequest(ws, []string{"resources/read"}, nil), session...)
			if r.status != http.StatusCreated {
				b.Fatalf("PAT: %d %v", r.status, r.body)
			}
			return r.body["token"].(string)
		}
		hot, calm := token(hotWS), token(calmWS)
		hot20 := token(hot20WS)
		annotateWorkspace(b, hotWS, map[string]string{ratelimit.TokenRequestsPerSecondAnnotation: "100"})
		annotateWorkspace(b, hot20WS, map[string]string{ratelimit.TokenRequestsPerSecondAnnotation: "20"})
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
		// quiet are the calm client's latencies of every quiet measure so far, atLimit those of
		// every at-its-limit measure, latest those of the last measure.
		var quiet, atLimit, latest []time.Duration
		calmReads := func(b *testing.B) {
			latest = make([]time.Duration, 0, b.N)
			measureClients(b, s, rawCommits, 1, "calm-requests/s", func() bool {
				began := time.Now()
				if status := floodRead(calmClient, server.URL, calm); status != http.StatusOK {
					b.Errorf("the calm workspace's read: %d", status)
					return false
				}
				latest = append(latest, time.Since(began))
				return true
			})
		}
		over := func(b *testing.B, base []time.Duration, unit string) {
			if len(base) > 0 && len(latest) > 0 {
				b.ReportMetric(quantile(latest, 0.50)/quantile(base, 0.50), "p50-x-"+unit)
				b.ReportMetric(quantile(latest, 0.99)/quantile(base, 0.99), "p99-x-"+unit)
			}
		}
		// whileFlooding measures the calm reads while token sends rate requests a second.
		whileFlooding := func(b *testing.B, token string, rate int) {
			flood := startFlood(b, server.URL, token, rate)
			time.Sleep(200 * time.Millisecond) // the flood is under way before the measure
			began, before := time.Now(), flood.mark(b)
			calmReads(b)
			after, elapsed := flood.mark(b), time.Since(began).Seconds()
			flood.stop(b)
			b.ReportMetric(float64(after.sent-before.sent)/elapsed, "hot-rps")
			b.ReportMetric(float64(after.limited-before.limited)/elapsed, "hot-429/s")
			b.ReportMetric((after.cpu-before.cpu).Seconds()/elapsed, "flood-cores")
			over(b, quiet, "quiet")
		}
		b.Run("quiet", func(b *testing.B) {
			calmReads(b)
			quiet = append(quiet, latest...)
			over(b, quiet, "quiet")
		})
		b.Run("hot-token-at-its-limit", func(b *testing.B) {
			whileFlooding(b, hot, 100)
			atLimit = append(atLimit, latest...)
		})
		b.Run("hot-token-1000rps", func(b *testing.B) {
			whileFlooding(b, hot, 1000)
			over(b, atLimit, "at-limit")
		})
		b.Run("hot-token-1000rps-limit-20", func(b *testing.B) {
			whileFlooding(b, hot20, 1000)
		})
		b.Run("quiet-again", func(b *testing.B) {
			calmReads(b)
			over(b, quiet, "quiet")
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
	floodRateEnv  = "PLATFORM_BENCH_FLOOD_RATE"
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

// startFlood starts a child process that sends rate requests a second with token to url.
func startFlood(b *testing.B, url, token string, rate int) *flood {
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), floodURLEnv+"="+url, floodTokenEnv+"="+token, floodRateEnv+"="+strconv.Itoa(rate))
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
	// A flooding client is another machine's; here it shares the server's cores, so it runs at
	// the lowest priority, and its own CPU (flood-cores) is not taken from the server and the calm
	// client. PLATFORM_BENCH_FLOOD_NICE=0 keeps it at theirs.
	if nice := os.Getenv("PLATFORM_BENCH_FLOOD_NICE"); nice != "0" {
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, 19)
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
// true when it did: its rate of requests a second, evenly spaced, each on its own goroutine, at most 256 at once over
// connections kept open as an SDK keeps them (a request that would wait for a 257th is skipped,
// and hot-rps says what was reached), until its input ends. 256, not fewer: the admitted
// requests the server paces wait up to a second, and must not hold back the flood's refused ones.
func floodChild() bool {
	url, token := os.Getenv(floodURLEnv), os.Getenv(floodTokenEnv)
	if url == "" {
		return false
	}
	rate, err := strconv.Atoi(os.Getenv(floodRateEnv))
	if err != nil || rate <= 0 {
		fmt.Fprintf(os.Stderr, "flood client: %s: %q is no rate\n", floodRateEnv, os.Getenv(floodRateEnv))
		os.Exit(2)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 256
	client := &http.Client{Transport: transport}
	var sent, limited atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	slots := make(chan struct{}, 256)
	wg.Go(func() {
		// Each tick starts every request due by then, so that a tick the scheduler delayed or
		// dropped does not lower the rate.
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		began, started := time.Now(), int64(0)
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for due := int64(time.Since(began).Seconds() * float64(rate)); started < due; started++ {
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
