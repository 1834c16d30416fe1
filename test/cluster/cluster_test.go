package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// Timing of the cluster: short leases so that a killed replica's runs and the controllers' Lease
// are taken over within seconds, not the defaults' 15 s.
var clusterEnv = []string{
	"PLATFORM_ENVIRONMENT=Testing",
	"AI__Provider=Deterministic",
	"Platform__Executor__LeaseSeconds=3",
	"PLATFORM_SERVE_ARGS=--leader-elect-lease-duration=4s --leader-elect-renew-deadline=3s --leader-elect-retry-period=1s",
}

// cluster is a cluster started by config/cluster/cluster.sh in a directory of the test.
type cluster struct {
	tb   testing.TB
	dir  string
	base int
}

// startCluster starts the cluster with its replicas (1 to 3) and stops it when the test ends.
func startCluster(tb testing.TB, replicas int) *cluster {
	tb.Helper()
	// Not t.TempDir, whose parent is private: as root, PostgreSQL runs as the postgres user, who
	// must reach its data directory inside the cluster's.
	parent, err := os.MkdirTemp("", "platform-cluster-")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(parent, 0o755); err != nil {
		tb.Fatal(err)
	}
	c := &cluster{tb: tb, dir: filepath.Join(parent, "cluster"), base: freePortRange(tb, 10)}
	tb.Cleanup(func() {
		if out, err := c.script("stop", replicas); err != nil {
			tb.Errorf("cluster.sh stop: %v\n%s", err, out)
		}
		os.RemoveAll(parent)
	})
	if out, err := c.script("start", replicas); err != nil {
		c.logs()
		tb.Fatalf("cluster.sh start: %v\n%s", err, out)
	}
	return c
}

// script runs config/cluster/cluster.sh with the cluster's directory and ports.
func (c *cluster) script(command string, replicas int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot, "config", "cluster", "cluster.sh"), command, c.dir)
	cmd.Dir = repoRoot
	cmd.Env = append(append(os.Environ(), clusterEnv...), "PLATFORM_BIN="+platformBinary,
		"PLATFORM_CLUSTER_PORT="+strconv.Itoa(c.base), "PLATFORM_CLUSTER_REPLICAS="+strconv.Itoa(replicas))
	return cmd.CombinedOutput()
}

func (c *cluster) replica(n int) string { return fmt.Sprintf("http://127.0.0.1:%d", c.base+6+n) }

func (c *cluster) pid(name string) int {
	c.tb.Helper()
	data, err := os.ReadFile(filepath.Join(c.dir, name+".pid"))
	if err != nil {
		c.tb.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		c.tb.Fatal(err)
	}
	return pid
}

// logs shows the tail of each replica's log, for a failure's diagnosis.
func (c *cluster) logs() {
	for n := 1; n <= 3; n++ {
		data, _ := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("replica-%d.log", n)))
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		c.tb.Logf("replica %d log (tail):\n%s", n, data)
	}
}

// postgres runs pg_ctl on the cluster's PostgreSQL (as the postgres user when root), as cluster.sh
// does.
func (c *cluster) postgres(args ...string) error {
	pgDir, err := os.ReadFile(filepath.Join(c.dir, "postgres.path"))
	if err != nil {
		return err
	}
	pgCtl, err := exec.LookPath("pg_ctl")
	if err != nil {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
		sort.Strings(matches)
		pgCtl = matches[len(matches)-1]
	}
	data := filepath.Join(strings.TrimSpace(string(pgDir)), "data")
	argv := append([]string{pgCtl, "-D", data}, args...)
	if os.Geteuid() == 0 {
		argv = append([]string{"runuser", "-u", "postgres", "--"}, argv...)
	}
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// etcdKeys lists the keys under prefix as etcd member n (1 to 3) holds them itself: a
// serializable read through its gRPC gateway, answered from the member's own copy, not the
// leader's.
func (c *cluster) etcdKeys(n int, prefix string) ([]string, error) {
	end := []byte(prefix)
	end[len(end)-1]++
	body, _ := json.Marshal(map[string]any{"key": []byte(prefix), "range_end": end, "keys_only": true, "serializable": true, "limit": 1000})
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Post(fmt.Sprintf("http://127.0.0.1:%d/v3/kv/range", c.base+n-1), "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Kvs []struct {
			Key []byte `json:"key"`
		} `json:"kvs"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("etcd member %d: %s", n, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(out.Kvs))
	for _, kv := range out.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys, nil
}

// disabledTrigger is a Trigger that never fires, named by its %s: an object written to etcd.
const disabledTrigger = `{"apiVersion":"platform/v1","kind":"Trigger","metadata":{"name":"%s"},"definition":{"displayName":"Never",
	"enabled":false,"source":{"kind":"schedule","schedule":{"type":"interval","expression":"01:00:00","timeZone":"UTC"}},
	"target":{"kind":"flow","flow":{"name":"report"},"input":{"request":"tick"}},"concurrencyPolicy":"allow"}}`

// freePortRange finds n consecutive free ports on loopback and returns the first, below Linux's
// ephemeral range (32768 and up), from which the cluster's own outgoing connections would take
// a port of a replica not started yet.
func freePortRange(t testing.TB, n int) int {
	t.Helper()
	for range 50 {
		base := 10000 + rand.IntN(22000)
		var held []net.Listener
		ok := true
		for p := base; p < base+n; p++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				ok = false
				break
			}
			held = append(held, l)
		}
		for _, l := range held {
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no range of free ports")
	return 0
}

// api is a caller of the service API with the administrator's session.
type api struct {
	cookie string
	http   *http.Client
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	err    error // the request did not get an answer (connection refused, reset)
}

func (a *api) call(base, method, path, body string) answer {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, base+path, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Cookie", a.cookie)
	req.Header.Set("X-Platform-Workspace", "default")
	resp, err := a.http.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{err: err}
	}
	out := answer{status: resp.StatusCode, header: resp.Header}
	_ = json.Unmarshal(data, &out.body)
	return out
}

// probe calls a health route as a load balancer does: without credentials.
func probe(base, path string) answer {
	return (&api{http: &http.Client{Timeout: 5 * time.Second}}).call(base, http.MethodGet, path, "")
}

func str(m map[string]any, path ...string) string {
	var v any = m
	for _, p := range path {
		mm, _ := v.(map[string]any)
		v = mm[p]
	}
	s, _ := v.(string)
	return s
}

// outcomes counts the answers of the run by kind, to prove that none was a 500.
type outcomes struct {
	mu     sync.Mutex
	counts map[string]int
	bad    []string
}

func (o *outcomes) note(what string, a answer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.counts == nil {
		o.counts = map[string]int{}
	}
	key := strconv.Itoa(a.status)
	switch {
	case a.err != nil:
		key = "no answer"
	case a.status >= 500 && a.status != http.StatusServiceUnavailable:
		o.bad = append(o.bad, fmt.Sprintf("%s: %d %v", what, a.status, a.body))
	case a.status == http.StatusServiceUnavailable && a.header.Get("Retry-After") == "":
		o.bad = append(o.bad, fmt.Sprintf("%s: 503 without Retry-After %v", what, a.body))
	}
	o.counts[key]++
}

// wrong records an answer that is not what the store holds.
func (o *outcomes) wrong(what string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bad = append(o.bad, what)
}

// item is a WorkItem the cluster acknowledged (201 or 202), with what answering its question needs.
type item struct {
	workItem, run, token, action string
	answered                     bool
}

// TestAClusterLosesNothingWhenAReplicaIsKilledAndAnEtcdMemberStopsUnderLoad runs the README's
// cluster (three replicas, three etcd members, PostgreSQL) under 64 clients submitting WorkItems
// and answering their questions through every replica, and a Trigger firing every second. Mid-run
// one replica is SIGKILLed and one etcd member stopped (and later both started again; the member,
// on its data, catches up on the writes acknowledged while it was down). Afterwards every
// acknowledged item completed exactly once with no step completed twice, the Trigger fired at
// most once per instant, and a hub client of the killed replica, reconnected to another and
// refreshed over REST, knows every completion. Then PostgreSQL is restarted under load: requests
// answer 503 with Retry-After meanwhile, never 500, everything recovers by itself and what was
// acknowledged completes once. Last, two etcd members are killed: readiness says so until the
// quorum is back.
func TestAClusterLosesNothingWhenAReplicaIsKilledAndAnEtcdMemberStopsUnderLoad(t *testing.T) {
	requireTools(t)
	g := NewWithT(t)
	began := time.Now()
	c := startCluster(t, 3)
	t.Logf("cluster ready in %s", time.Since(began).Round(time.Millisecond))
	defer func() {
		if t.Failed() {
			c.logs()
		}
	}()
	a := &api{http: &http.Client{Timeout: 20 * time.Second}}

	// Bootstrap, raced on the three replicas: exactly one first administrator.
	var (
		wg        sync.WaitGroup
		bootstrap [3]*http.Response
		bootErr   [3]error
	)
	for n := range 3 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, c.replica(n+1)+"/api/auth/bootstrap", strings.NewReader(
				`{"username":"admin","password":"Change-me-1st!","tenantName":"Acme","workspaceName":"default"}`))
			req.Header.Set("Content-Type", "application/json")
			bootstrap[n], bootErr[n] = a.http.Do(req)
		})
	}
	wg.Wait()
	var created []int
	for n, resp := range bootstrap {
		g.Expect(bootErr[n]).NotTo(HaveOccurred())
		resp.Body.Close()
		if resp.StatusCode == http.StatusCreated {
			created = append(created, n)
			var cookies []string
			for _, ck := range resp.Cookies() {
				cookies = append(cookies, ck.Name+"="+ck.Value)
			}
			a.cookie = strings.Join(cookies, "; ")
		} else {
			g.Expect(resp.StatusCode).To(Equal(http.StatusConflict), "replica %d", n+1)
		}
	}
	g.Expect(created).To(HaveLen(1), "exactly one replica bootstraps")

	// The quickstart's flow (a question, then the answer), applied through replica 2's kube API.
	apply := exec.Command(platformBinary, "apply", "-n", "default", "-f", filepath.Join(repoRoot, "config", "quickstart"),
		"--kubeconfig", filepath.Join(c.dir, "replica-2", "admin.kubeconfig"))
	out, err := apply.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	submit := `{"type":"report","title":"%s","instruction":"Prepare it","flowReference":{"name":"report"}}`
	g.Eventually(func() int {
		return a.call(c.replica(3), http.MethodPost, "/api/work/workitems", fmt.Sprintf(submit, "warm-up")).status
	}).WithTimeout(60*time.Second).WithPolling(250*time.Millisecond).Should(BeElementOf(http.StatusCreated, http.StatusAccepted), "the flow is published")

	// A Trigger firing every second for the whole run, created through replica 3.
	trigger := a.call(c.replica(3), http.MethodPost, "/api/triggers", `{"apiVersion":"platform/v1","kind":"Trigger",
		"metadata":{"name":"every-second"},"definition":{"displayName":"Every second","enabled":true,
		"source":{"kind":"schedule","schedule":{"type":"interval","expression":"00:00:01","timeZone":"UTC"}},
		"target":{"kind":"flow","flow":{"name":"report"},"input":{"request":"tick"}},"concurrencyPolicy":"allow"}}`)
	g.Expect(trigger.status).To(Equal(http.StatusCreated), "%v", trigger.body)

	// A hub client of the replica that will be killed.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	firstHub, err := dialHub(ctx, c.replica(1), a.cookie, "default")
	g.Expect(err).NotTo(HaveOccurred())
	defer firstHub.close()

	// 64 clients, each submitting through one replica and answering through the next, moving on
	// to another replica when one does not answer (as a load balancer would).
	const clients = 64
	const loadFor = 16 * time.Second
	var (
		results  outcomes
		mu       sync.Mutex
		items    []*item
		stop     atomic.Bool
		killed   atomic.Bool
		killedAt atomic.Value
		loadDone sync.WaitGroup
	)
	pick := func(k int) string { return c.replica(k%3 + 1) }
	loadStart := time.Now()
	for w := range clients {
		loadDone.Go(func() {
			for k := w; !stop.Load(); k++ {
				sub := a.call(pick(k), http.MethodPost, "/api/work/workitems?waitSeconds=10", fmt.Sprintf(submit, fmt.Sprintf("w%d-%d", w, k)))
				results.note("submit", sub)
				if sub.status != http.StatusCreated && sub.status != http.StatusAccepted {
					if sub.err != nil || sub.status == http.StatusServiceUnavailable {
						time.Sleep(100 * time.Millisecond)
					}
					continue
				}
				it := &item{workItem: str(sub.body, "workItem", "id"), run: str(sub.body, "flowRun", "id"),
					token: str(sub.body, "resumeToken"), action: str(sub.body, "flowRun", "pendingAction", "id")}
				mu.Lock()
				items = append(items, it)
				mu.Unlock()
				answerItem(a, &results, it, func(j int) string { return pick(k + 1 + j) })
			}
		})
	}

	// The faults: replica 1 SIGKILLed, etcd member 3 stopped; both started again a little later.
	faultsDone := make(chan struct{})
	restarted := make(chan error, 1)
	// writtenWhileDown are the Triggers whose creation the kube API acknowledged while etcd
	// member 3 was down: the member, started again on its data, must catch up on them.
	var writtenWhileDown []string
	go func() {
		defer close(faultsDone)
		time.Sleep(4 * time.Second)
		_ = syscall.Kill(c.pid("replica-1"), syscall.SIGKILL)
		killedAt.Store(time.Now())
		killed.Store(true)
		time.Sleep(2 * time.Second)
		_ = syscall.Kill(c.pid("etcd-3"), syscall.SIGTERM)
		time.Sleep(3 * time.Second)
		// The kube API answers with two of three members: reads, and writes.
		got := a.call(c.replica(2), http.MethodGet, "/api/triggers/every-second", "")
		if got.status != http.StatusOK {
			restarted <- fmt.Errorf("reading a Trigger with one etcd member down: %d %v %v", got.status, got.err, got.body)
			return
		}
		for k := range 5 {
			name := fmt.Sprintf("member-down-%d", k)
			created := a.call(c.replica(2+k%2), http.MethodPost, "/api/triggers", fmt.Sprintf(disabledTrigger, name))
			if created.status != http.StatusCreated {
				restarted <- fmt.Errorf("creating a Trigger with one etcd member down: %d %v %v", created.status, created.err, created.body)
				return
			}
			writtenWhileDown = append(writtenWhileDown, name)
		}
		time.Sleep(time.Second)
		out, err := c.script("start", 3)
		if err != nil {
			err = fmt.Errorf("cluster.sh start again: %v\n%s", err, out)
		}
		restarted <- err
	}()

	// The hub client of the killed replica loses its connection; it connects to another replica,
	// joins again and refreshes over REST, as the README tells clients to.
	select {
	case <-firstHub.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the hub client of the killed replica kept its connection")
	}
	g.Expect(killed.Load()).To(BeTrue())
	var secondHub *hubClient
	g.Eventually(func() error {
		secondHub, err = dialHub(ctx, c.replica(2), a.cookie, "default")
		return err
	}).WithTimeout(20 * time.Second).Should(Succeed())
	defer secondHub.close()
	refreshed := map[string]bool{}
	for before := ""; ; {
		page := a.call(c.replica(2), http.MethodGet, "/api/workspaces/default/tasks?state=completed&take=100"+before, "")
		g.Expect(page.status).To(Equal(http.StatusOK), "%v %v", page.err, page.body)
		list, _ := page.body["items"].([]any)
		for _, x := range list {
			refreshed[str(x.(map[string]any), "id")] = true
		}
		if len(list) < 100 {
			break
		}
		before = "&before=" + str(list[len(list)-1].(map[string]any), "updatedAt")
	}

	time.Sleep(time.Until(loadStart.Add(loadFor)))
	stop.Store(true)
	loadDone.Wait()
	<-faultsDone
	g.Expect(<-restarted).To(Succeed())
	// Etcd member 3, started again on its data, rejoined and caught up: its own (serializable)
	// reads hold every write acknowledged while it was down.
	g.Expect(writtenWhileDown).To(HaveLen(5))
	g.Eventually(func() ([]string, error) { return c.etcdKeys(3, "/registry/platform.dev/triggers/") }).
		WithTimeout(15*time.Second).WithPolling(250*time.Millisecond).Should(ContainElements(func() []any {
		var want []any
		for _, name := range writtenWhileDown {
			want = append(want, HaveSuffix("/"+name))
		}
		return want
	}()...), "etcd member 3 caught up on the Triggers created while it was down")
	mu.Lock()
	acked := items
	mu.Unlock()
	t.Logf("load: %d WorkItems acknowledged, answers %v, %s since start", len(acked), results.counts, time.Since(began).Round(time.Millisecond))
	g.Expect(results.bad).To(BeEmpty(), "no 500, every 503 with Retry-After")
	g.Expect(len(acked)).To(BeNumerically(">=", clients), "the load ran")

	tasks, restarts := eachCompletedOnce(t, c, a, &results, acked)
	t.Logf("every acknowledged run completed once; %d steps were taken over from the killed replica", restarts)

	// The hub client of the killed replica knows every completion: from its first connection,
	// from the REST refresh after reconnecting, or from the events of its new connection.
	g.Eventually(func(g Gomega) {
		known := secondHub.completedTasks()
		for id := range firstHub.completedTasks() {
			known[id] = true
		}
		for id := range refreshed {
			known[id] = true
		}
		for run, task := range tasks {
			g.Expect(task).NotTo(BeEmpty(), "run %s has a Task", run)
			g.Expect(known).To(HaveKey(task), "the completion of run %s (Task %s) reached the reconnected client", run, task)
		}
	}).WithTimeout(10 * time.Second).Should(Succeed())

	// The Trigger fired at most once per instant, across the replicas and the failover.
	occ := a.call(c.replica(2), http.MethodGet, "/api/triggers/every-second/occurrences?limit=100", "")
	g.Expect(occ.status).To(Equal(http.StatusOK), "%v", occ.body)
	instants, taskIDs := map[string]int{}, map[string]int{}
	list, _ := occ.body["items"].([]any)
	for _, x := range list {
		o := x.(map[string]any)
		if str(o, "kind") == "Scheduled" {
			instants[str(o, "scheduledTime")]++
			// An instant that submitted nothing (a misfire while no replica led, a skip) has no
			// Task; each that did has its own.
			if task := str(o, "taskId"); task != "" {
				taskIDs[task]++
			}
		}
	}
	for instant, n := range instants {
		g.Expect(n).To(Equal(1), "instant %s fired %d times", instant, n)
	}
	for task, n := range taskIDs {
		g.Expect(n).To(Equal(1), "Task %s submitted by %d occurrences", task, n)
	}
	// It kept firing across the failover: instants after the kill were fired too (by whichever
	// replica leads now), however few a loaded machine let through.
	after := 0
	for instant := range instants {
		if at, err := time.Parse(time.RFC3339Nano, instant); err == nil && at.After(killedAt.Load().(time.Time)) {
			after++
		}
	}
	g.Expect(after).To(BeNumerically(">", 0), "the Trigger fired after the kill: %v", instants)
	t.Logf("the Trigger fired %d instants", len(instants))

	completedRun := ""
	for run := range tasks {
		completedRun = run
		break
	}
	postgresRestartedUnderLoad(t, c, a, completedRun)
	etcdQuorumLostAndRegained(t, c, a)
	t.Logf("done in %s", time.Since(began).Round(time.Millisecond))
}

// eachCompletedOnce answers every acknowledged item's question not answered yet and checks that
// its run completed exactly once with no step completed twice; it returns each run's Task and how
// many steps were restarted (taken over from a dead executor).
func eachCompletedOnce(t *testing.T, c *cluster, a *api, results *outcomes, acked []*item) (map[string]string, int64) {
	t.Helper()
	pick := func(k int) string { return c.replica(k%3 + 1) }
	tasks := map[string]string{}
	var (
		verify   sync.WaitGroup
		tasksMu  sync.Mutex
		failures []string
	)
	// The checks run concurrently: their failures are collected and reported from the test's
	// goroutine.
	vg := NewGomega(func(message string, _ ...int) {
		tasksMu.Lock()
		failures = append(failures, message)
		tasksMu.Unlock()
	})
	var restarts atomic.Int64
	sem := make(chan struct{}, 16)
	for _, it := range acked {
		verify.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if !it.answered {
				answerItem(a, results, it, func(j int) string { return pick(j) })
			}
			var run answer
			vg.Eventually(func() string {
				run = a.call(pick(rand.IntN(3)), http.MethodGet, "/api/flowRuns/"+it.run, "")
				return str(run.body, "state")
			}).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(Equal("Completed"), "run %s of %s", it.run, it.workItem)
			tasksMu.Lock()
			tasks[it.run] = str(run.body, "correlation", "workTaskId")
			tasksMu.Unlock()
			events := a.call(pick(rand.IntN(3)), http.MethodGet, "/api/flowRuns/"+it.run+"/events?take=100", "")
			vg.Expect(events.status).To(Equal(http.StatusOK), "%v", events.body)
			completedSteps := map[string]int{}
			runCompleted := 0
			list, _ := events.body["items"].([]any)
			for _, x := range list {
				e := x.(map[string]any)
				switch str(e, "type") {
				case "StepCompleted":
					// One execution of a step (its attempt's runtime execution, the idempotency key
					// of the agent call) completes once; the agent step of this flow runs twice,
					// before and after its question, as two executions.
					completedSteps[str(e, "step")+" "+str(e, "correlation", "runtimeExecutionId")+" "+str(e, "state")]++
				case "StepRestarted":
					restarts.Add(1)
				case "RunCompleted":
					runCompleted++
				}
			}
			vg.Expect(runCompleted).To(Equal(1), "run %s completed once: %v", it.run, list)
			for step, n := range completedSteps {
				vg.Expect(n).To(Equal(1), "step %s of run %s completed %d times: %v", step, it.run, n, list)
			}
		})
	}
	verify.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d checks failed; the first:\n%s", len(failures), failures[0])
	}
	return tasks, restarts.Load()
}

// answerItem answers the item's question with the resume token, through the replicas that via
// gives in turn, until an answer is taken (or was taken by a request whose answer was lost).
func answerItem(a *api, results *outcomes, it *item, via func(int) string) {
	deadline := time.Now().Add(30 * time.Second)
	for j := 0; time.Now().Before(deadline); j++ {
		base := via(j)
		if it.action == "" {
			// The submission's wait ended before the question was asked (its executor died):
			// the run is taken over after its lease.
			run := a.call(base, http.MethodGet, "/api/flowRuns/"+it.run, "")
			results.note("read run", run)
			if str(run.body, "state") != "ActionRequired" {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			it.action = str(run.body, "pendingAction", "id")
		}
		resp := a.call(base, http.MethodPost, "/api/flowRuns/"+it.run+"/pending-actions/"+it.action+"/responses?waitSeconds=10",
			`{"resumeToken":"`+it.token+`","value":"brief"}`)
		results.note("answer", resp)
		switch {
		case resp.status == http.StatusOK:
			it.answered = true
			return
		case resp.err != nil || resp.status == http.StatusServiceUnavailable:
			time.Sleep(100 * time.Millisecond)
		case resp.status >= 400 && resp.status < 500:
			// Answered already, by a request whose answer was lost with its replica?
			run := a.call(via(j+1), http.MethodGet, "/api/flowRuns/"+it.run, "")
			if s := str(run.body, "state"); s != "" && s != "ActionRequired" {
				it.answered = true
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// postgresRestartedUnderLoad stops PostgreSQL while clients keep calling every replica: each
// answer is a 2xx or a 503 with Retry-After, /readyz fails with its reason and /livez does not;
// once PostgreSQL is back every replica is ready again without a restart, and every WorkItem
// acknowledged before, during or after the restart completes exactly once. A completed run read
// meanwhile is either itself or a 503, never a wrong answer.
func postgresRestartedUnderLoad(t *testing.T, c *cluster, a *api, completedRun string) {
	g := NewWithT(t)
	var (
		results outcomes
		stop    atomic.Bool
		load    sync.WaitGroup
		mu      sync.Mutex
		acked   []*item
	)
	for w := range 8 {
		load.Go(func() {
			for k := w; !stop.Load(); k++ {
				base := c.replica(k%3 + 1)
				if k%2 == 0 {
					sub := a.call(base, http.MethodPost, "/api/work/workitems", fmt.Sprintf(`{"type":"report","title":"pg-%d-%d","instruction":"x","flowReference":{"name":"report"}}`, w, k))
					results.note("submit", sub)
					if sub.status == http.StatusCreated || sub.status == http.StatusAccepted {
						mu.Lock()
						acked = append(acked, &item{workItem: str(sub.body, "workItem", "id"), run: str(sub.body, "flowRun", "id"),
							token: str(sub.body, "resumeToken"), action: str(sub.body, "flowRun", "pendingAction", "id")})
						mu.Unlock()
					}
				} else if k%4 == 1 {
					results.note("list tasks", a.call(base, http.MethodGet, "/api/workspaces/default/tasks?take=5", ""))
				} else {
					// A run that completed before: the store's outage is a 503, never another
					// answer about it (a 404, another state).
					got := a.call(base, http.MethodGet, "/api/flowRuns/"+completedRun, "")
					results.note("read a completed run", got)
					if got.err == nil && got.status != http.StatusServiceUnavailable && (got.status != http.StatusOK || str(got.body, "state") != "Completed") {
						results.wrong(fmt.Sprintf("read completed run %s: %d %v", completedRun, got.status, got.body))
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	time.Sleep(time.Second)
	g.Expect(c.postgres("-m", "fast", "-w", "stop")).To(Succeed())
	for n := 1; n <= 3; n++ {
		g.Eventually(func() int { return probe(c.replica(n), "/readyz").status }).
			WithTimeout(5*time.Second).Should(Equal(http.StatusServiceUnavailable), "replica %d not ready without PostgreSQL", n)
		ready := probe(c.replica(n), "/readyz")
		g.Expect(str(ready.body, "detail")).To(Equal("not ready: the SQL store does not answer"))
		g.Expect(ready.header.Get("Retry-After")).NotTo(BeEmpty())
		g.Expect(probe(c.replica(n), "/livez").status).To(Equal(http.StatusOK), "replica %d lives", n)
	}
	time.Sleep(2 * time.Second)
	pgDir, _ := os.ReadFile(filepath.Join(c.dir, "postgres.path"))
	dir := strings.TrimSpace(string(pgDir))
	g.Expect(c.postgres("-l", filepath.Join(dir, "server.log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c max_connections=200", c.base+6, dir), "start")).To(Succeed())
	for n := 1; n <= 3; n++ {
		g.Eventually(func() int { return probe(c.replica(n), "/readyz").status }).
			WithTimeout(15*time.Second).Should(Equal(http.StatusOK), "replica %d ready again", n)
	}
	g.Eventually(func() int {
		return a.call(c.replica(1), http.MethodPost, "/api/work/workitems", `{"type":"report","title":"after","instruction":"x","flowReference":{"name":"report"}}`).status
	}).WithTimeout(10 * time.Second).Should(BeElementOf(http.StatusCreated, http.StatusAccepted))
	stop.Store(true)
	load.Wait()
	t.Logf("PostgreSQL restart: answers %v", results.counts)
	g.Expect(results.bad).To(BeEmpty(), "no 500 and no wrong answer while PostgreSQL restarts, every 503 with Retry-After")
	g.Expect(results.counts["503"]).To(BeNumerically(">", 0), "requests were refused cleanly while PostgreSQL was down")
	for n := 1; n <= 3; n++ {
		g.Expect(probe(c.replica(n), "/livez").status).To(Equal(http.StatusOK), "replica %d survived", n)
	}
	g.Expect(acked).NotTo(BeEmpty())
	eachCompletedOnce(t, c, a, &results, acked)
	g.Expect(results.bad).To(BeEmpty(), "no 500 after PostgreSQL came back")
	t.Logf("PostgreSQL restart: the %d WorkItems acknowledged around it completed once each", len(acked))
}

// etcdQuorumLostAndRegained kills two of the three etcd members: every replica's /readyz then
// fails, saying etcd does not answer, while /livez stays up; started again on their data, the
// members restore the quorum and every replica is ready again by itself, and writes are taken.
func etcdQuorumLostAndRegained(t *testing.T, c *cluster, a *api) {
	g := NewWithT(t)
	began := time.Now()
	for _, member := range []string{"etcd-2", "etcd-3"} {
		g.Expect(syscall.Kill(c.pid(member), syscall.SIGKILL)).To(Succeed())
	}
	// What each replica's probe answers, asked of the three at once as a load balancer does.
	probeAll := func(path string) []answer {
		out := make([]answer, 3)
		var wg sync.WaitGroup
		for n := range 3 {
			wg.Go(func() { out[n] = probe(c.replica(n+1), path) })
		}
		wg.Wait()
		return out
	}
	detail := func(a answer) string { return str(a.body, "detail") }
	status := func(a answer) int { return a.status }
	g.Eventually(func() []answer { return probeAll("/readyz") }).WithTimeout(15*time.Second).WithPolling(250*time.Millisecond).
		Should(HaveEach(WithTransform(detail, Equal("not ready: the kube API or its etcd does not answer"))), "no replica is ready without an etcd quorum")
	g.Expect(probeAll("/livez")).To(HaveEach(WithTransform(status, Equal(http.StatusOK))), "every replica lives")
	lost := time.Since(began)
	if out, err := c.script("start", 3); err != nil {
		t.Fatalf("cluster.sh start again: %v\n%s", err, out)
	}
	g.Eventually(func() []answer { return probeAll("/readyz") }).WithTimeout(20*time.Second).WithPolling(250*time.Millisecond).
		Should(HaveEach(WithTransform(status, Equal(http.StatusOK))), "every replica is ready again with the quorum")
	g.Eventually(func() int {
		return a.call(c.replica(1), http.MethodPost, "/api/triggers", fmt.Sprintf(disabledTrigger, "quorum-regained")).status
	}).WithTimeout(10 * time.Second).Should(Equal(http.StatusCreated))
	t.Logf("etcd quorum: every replica not ready %s after losing it, ready again %s after it returned", lost.Round(time.Millisecond),
		(time.Since(began) - lost).Round(time.Millisecond))
}
