package cluster

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkWorkItemsByReplicas measures WorkItems per second through 1, 2 and 3 replicas on one
// PostgreSQL (the cluster of config/cluster/cluster.sh, replicas added between the rounds): 32
// clients each submit a WorkItem of the quickstart's flow through one replica and answer its
// question through the next, waiting for the run to complete; items/s counts completed items.
func BenchmarkWorkItemsByReplicas(b *testing.B) {
	requireTools(b)
	c := startCluster(b, 1)
	a := signUp(b, c)
	const clients = 32
	for n := 1; n <= 3; n++ {
		if n > 1 {
			if out, err := c.script("start", n); err != nil {
				b.Fatalf("cluster.sh start with %d replicas: %v\n%s", n, err, out)
			}
		}
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			var (
				next   atomic.Int64
				failed atomic.Value
				wg     sync.WaitGroup
			)
			b.ResetTimer()
			for range clients {
				wg.Go(func() {
					for {
						i := int(next.Add(1))
						if i > b.N || failed.Load() != nil {
							return
						}
						if err := completeOne(a, c.replica(i%n+1), c.replica((i+1)%n+1), i); err != nil {
							failed.Store(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			if err, _ := failed.Load().(error); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// completeOne submits a WorkItem through one replica and answers its question through another.
func completeOne(a *api, submitVia, answerVia string, i int) error {
	sub := a.call(submitVia, http.MethodPost, "/api/work/workitems?waitSeconds=10",
		fmt.Sprintf(`{"type":"report","title":"bench-%d","instruction":"Prepare it","flowReference":{"name":"report"}}`, i))
	action := str(sub.body, "flowRun", "pendingAction", "id")
	if sub.err != nil || action == "" {
		return fmt.Errorf("submit: %d %v %v", sub.status, sub.err, sub.body)
	}
	resp := a.call(answerVia, http.MethodPost, "/api/flowRuns/"+str(sub.body, "flowRun", "id")+"/pending-actions/"+action+"/responses?waitSeconds=10",
		`{"resumeToken":"`+str(sub.body, "resumeToken")+`","value":"brief"}`)
	if state := str(resp.body, "flowRun", "state"); resp.status != http.StatusOK || state != "Completed" {
		return fmt.Errorf("answer: %d %s %v %v", resp.status, state, resp.err, resp.body)
	}
	return nil
}

// signUp bootstraps the cluster's administrator through replica 1 and applies the quickstart's
// flow, published once a submission is accepted.
func signUp(tb testing.TB, c *cluster) *api {
	tb.Helper()
	a := &api{http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	req, _ := http.NewRequest(http.MethodPost, c.replica(1)+"/api/auth/bootstrap", strings.NewReader(
		`{"username":"admin","password":"Change-me-1st!","tenantName":"Acme","workspaceName":"default"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		tb.Fatalf("bootstrap: %d", resp.StatusCode)
	}
	var cookies []string
	for _, ck := range resp.Cookies() {
		cookies = append(cookies, ck.Name+"="+ck.Value)
	}
	a.cookie = strings.Join(cookies, "; ")
	out, err := exec.Command(platformBinary, "apply", "-n", "default", "-f", filepath.Join(repoRoot, "config", "quickstart"),
		"--kubeconfig", filepath.Join(c.dir, "replica-1", "admin.kubeconfig")).CombinedOutput()
	if err != nil {
		tb.Fatalf("apply the quickstart: %v\n%s", err, out)
	}
	deadline := time.Now().Add(60 * time.Second)
	for completeOne(a, c.replica(1), c.replica(1), 0) != nil {
		if time.Now().After(deadline) {
			tb.Fatal("the quickstart's flow was not published within 60 s")
		}
		time.Sleep(250 * time.Millisecond)
	}
	return a
}
