package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	"platform.dev/platform/apiserver/executor"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

func benchCall(b testing.TB, server *httptest.Server, method, path, body string) (int, map[string]any) {
	req, err := http.NewRequest(method, server.URL+path, bytes.NewBufferString(body))
	if err != nil {
		b.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return resp.StatusCode, out
}

// benchFlow creates an agent with instructions and a published, active Direct flow on it.
func benchFlow(b testing.TB, server *httptest.Server, name, instructions string) {
	for _, c := range []struct{ path, body string }{
		{"/api/agents", `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"` + name + `"},"definition":{"instructions":"` + instructions + `"}}`},
		{"/api/flows", directFlowBody(name, name, "Bench")},
		{"/api/flows/" + name + "/versions", `{"version":"1.0.0","activate":true}`},
	} {
		if status, out := benchCall(b, server, http.MethodPost, c.path, c.body); status != http.StatusCreated {
			b.Fatalf("%s: %d %v", c.path, status, out)
		}
	}
}

// reportLatencies reports the throughput and the p50 and p99 of the latencies.
func reportLatencies(b *testing.B, unit string, latencies []time.Duration) {
	slices.Sort(latencies)
	at := func(q float64) float64 {
		return float64(latencies[min(len(latencies)-1, int(q*float64(len(latencies))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(latencies))/b.Elapsed().Seconds(), unit)
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// measureClients runs once b.N times from the given number of concurrent clients and reports the
// throughput and latencies in unit, and the process's CPU time per call (cpu-ms/op) with the
// cores it kept busy: on this machine the CPU, not the store, bounds the rate, which these show.
// What s ran meanwhile is reported per call (reportStoreCost), and the throughput's share of
// rawCommits, the commits/s of the same store measured in the same run (of-raw).
// A client stops at its first failed call.
func measureClients(b *testing.B, s *store.Store, rawCommits float64, clients int, unit string, once func() bool) {
	var (
		next      atomic.Int64
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, b.N)
		wg        sync.WaitGroup
	)
	cpuBefore := processCPU(b)
	hostBefore, hostMeasured := hostCPU()
	countsBefore := s.Counts()
	b.ResetTimer()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				began := time.Now()
				if !once() {
					return
				}
				mu.Lock()
				latencies = append(latencies, time.Since(began))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(latencies) > 0 {
		reportLatencies(b, unit, latencies)
		b.ReportMetric(float64(len(latencies))/b.Elapsed().Seconds()/rawCommits, "of-raw")
		reportStoreCost(b, s.Counts().Sub(countsBefore), len(latencies))
		cpu := processCPU(b) - cpuBefore
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(latencies)), "cpu-ms/op")
		b.ReportMetric(cpu.Seconds()/b.Elapsed().Seconds(), "cores")
		// What the whole machine used meanwhile (this process, the PostgreSQL server, anything
		// else): at runtime.NumCPU() the machine is the bound, not a lock or a wait.
		if hostAfter, ok := hostCPU(); ok && hostMeasured {
			b.ReportMetric((hostAfter-hostBefore).Seconds()/b.Elapsed().Seconds(), "host-cores")
		}
	}
}

// reportStoreCost reports what the store ran per operation, as the store counted it: statements
// (stmt/op), its callers' transactions (tx/op), the commits they took (commits/op; on SQLite
// concurrent transactions share one) and, on PostgreSQL, the round trips to the server
// (trips/op: statements sent together take one).
func reportStoreCost(b *testing.B, ran store.Counts, ops int) {
	b.ReportMetric(float64(ran.Statements)/float64(ops), "stmt/op")
	if ran.RoundTrips > 0 {
		b.ReportMetric(float64(ran.RoundTrips)/float64(ops), "trips/op")
	}
	b.ReportMetric(float64(ran.Transactions)/float64(ops), "tx/op")
	b.ReportMetric(float64(ran.Commits)/float64(ops), "commits/op")
}

// rawCommitsNow measures the store's raw commits/s (storetest.BenchRawCommits) for a second, for
// the Work benchmarks' ratio to the ceiling of the same store in the same run, and reports it.
func rawCommitsNow(b *testing.B, s *store.Store) float64 {
	rate := storetest.RawCommitsPerSecond(b, s, time.Second)
	b.Logf("%s raw commits: %.0f/s", s.Dialect(), rate)
	return rate
}

// hostCPU is the CPU time all of the machine's processors spent busy so far (Linux: /proc/stat);
// ok is false where it cannot be read.
func hostCPU() (busy time.Duration, ok bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0, false
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user, nice, system, irq, softirq (guest time is in user)
		n, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	// The kernel counts in USER_HZ, 100 per second on every Linux architecture Go supports.
	return time.Duration(ticks) * 10 * time.Millisecond, true
}

// processCPU is the CPU time (user and system) the process has used so far.
func processCPU(b *testing.B) time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		b.Fatal(err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// outboxWriteSeconds is the total of platform_workplace_outbox_write_seconds so far.
func outboxWriteSeconds(b *testing.B) float64 {
	return histogram(b, "platform_workplace_outbox_write_seconds").GetSampleSum()
}

// histogram is the registered histogram of that name as it is now.
func histogram(b *testing.B, name string) *dto.Histogram {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetHistogram()
		}
	}
	b.Fatal(name + " is not registered")
	return nil
}

var benchFlows atomic.Int64

// benchServer is workServer as `platform serve` runs it: the executor and the service API read
// Management objects with the control plane's loopback identity (a token), not the
// administrator's client certificate, which the kube API verifies at every request, and runs
// resolve their Flow versions and agents from informers first.
func benchServer(b testing.TB, s *store.Store) *httptest.Server {
	b.Helper()
	if env.Server() == nil {
		return workServer(b, s) // against an existing cluster there is no loopback identity
	}
	loopback, err := client.New(env.Server().LoopbackConfig, client.Options{Scheme: platformscheme.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	informers, err := cache.New(env.Server().LoopbackConfig, cache.Options{Scheme: platformscheme.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = informers.Start(ctx) }()
	b.Cleanup(func() { cancel(); <-stopped })
	return workServerOn(b, s, loopback, executor.CacheFirst{Cache: informers, Live: loopback, Writes: executor.NewWrites(platformscheme.Scheme)}, nil, nil)
}

// BenchmarkWorkItemsEndToEnd: WorkItems submitted through the Work API and executed by the
// executor to Completed (a Direct flow on a Deterministic agent), by 1, 8 and 64 concurrent
// clients; the latency is submit -> completed as a client sees it.
func BenchmarkWorkItemsEndToEnd(b *testing.B) {
	storetest.ForEachDialectBench(b, func(b *testing.B, s *store.Store) {
		server := benchServer(b, s)
		rawCommits := rawCommitsNow(b, s)
		for _, clients := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
				flow := fmt.Sprintf("bench-%d", benchFlows.Add(1))
				benchFlow(b, server, flow, "@respond done")
				body := `{"type":"bench","title":"t","instruction":"i","flowReference":{"name":"` + flow + `"}}`
				// The time transactions spent writing the Workplace outbox, waits for the rows it
				// locks included: where the transactions of one busy workspace would queue.
				outboxBefore := outboxWriteSeconds(b)
				// On SQLite, how busy the single writer was with the grouped commits (near 1 it is
				// the bound).
				writerBefore := histogram(b, "platform_store_commit_group_seconds")
				defer func() {
					b.ReportMetric((outboxWriteSeconds(b)-outboxBefore)*1000/float64(b.N), "outbox-ms/op")
					if writer := histogram(b, "platform_store_commit_group_seconds"); writer.GetSampleCount() > writerBefore.GetSampleCount() {
						b.ReportMetric((writer.GetSampleSum()-writerBefore.GetSampleSum())/b.Elapsed().Seconds(), "writer-busy")
					}
				}()
				measureClients(b, s, rawCommits, clients, "items/s", func() bool {
					status, out := benchCall(b, server, http.MethodPost, "/api/work/workitems?waitSeconds=30", body)
					if status != http.StatusAccepted || field(out, "flowRun", "state") != "Completed" {
						b.Errorf("submit: %d %v", status, out)
						return false
					}
					return true
				})
			})
		}
	})
}

// BenchmarkSuspendRespondResume: the latency from answering a pending action to the run's
// completion, as the client that answers sees it (the answer waits for the run to settle).
func BenchmarkSuspendRespondResume(b *testing.B) {
	storetest.ForEachDialectBench(b, func(b *testing.B, s *store.Store) {
		server := benchServer(b, s)
		flow := fmt.Sprintf("bench-ask-%d", benchFlows.Add(1))
		benchFlow(b, server, flow, `@requestChoice Pick\n@option a A`)
		rawCommits := rawCommitsNow(b, s)
		latencies := make([]time.Duration, 0, b.N)
		// What the answers alone cost: the submissions run with the timer stopped.
		var (
			ran store.Counts
			cpu time.Duration
		)
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			status, out := benchCall(b, server, http.MethodPost, "/api/work/workitems?waitSeconds=30",
				`{"type":"bench","title":"t","instruction":"i","flowReference":{"name":"`+flow+`"}}`)
			action, ok := field(out, "flowRun", "pendingAction", "id").(string)
			if status != http.StatusAccepted || !ok {
				b.Fatalf("submit: %d %v", status, out)
			}
			path := "/api/flowRuns/" + field(out, "flowRun", "id").(string) + "/pending-actions/" + action + "/responses?waitSeconds=30"
			answer := `{"resumeToken":"` + out["resumeToken"].(string) + `","value":"a"}`
			b.StartTimer()
			countsBefore, cpuBefore := s.Counts(), processCPU(b)
			began := time.Now()
			status, out = benchCall(b, server, http.MethodPost, path, answer)
			latencies = append(latencies, time.Since(began))
			ran, cpu = addCounts(ran, s.Counts().Sub(countsBefore)), cpu+processCPU(b)-cpuBefore
			if status != http.StatusOK || field(out, "flowRun", "state") != "Completed" {
				b.Fatalf("respond: %d %v", status, out)
			}
		}
		reportLatencies(b, "resumes/s", latencies)
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/rawCommits, "of-raw")
		reportStoreCost(b, ran, b.N)
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	})
}

func addCounts(a, b store.Counts) store.Counts {
	return store.Counts{Statements: a.Statements + b.Statements, Transactions: a.Transactions + b.Transactions, Commits: a.Commits + b.Commits,
		Replans: a.Replans + b.Replans, RoundTrips: a.RoundTrips + b.RoundTrips}
}
