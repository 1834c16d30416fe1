package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// mcpPost sends one JSON-RPC body to /mcp as an MCP client does, with token as Bearer when set.
func mcpPost(client *http.Client, base, token string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// toolCall is the JSON-RPC request that calls tool with arguments.
func toolCall(id int, tool string, arguments string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, arguments)
}

// processUsage is what the server's process holds: open descriptors, threads and resident memory.
type processUsage struct {
	descriptors, threads int
	residentMB           int
}

func usageOf(t *testing.T, s *server) processUsage {
	t.Helper()
	pid := s.cmd.Process.Pid
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	u := processUsage{descriptors: len(fds)}
	for _, line := range strings.Split(string(status), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "Threads:":
			u.threads, _ = strconv.Atoi(fields[1])
		case "VmRSS:":
			kb, _ := strconv.Atoi(fields[1])
			u.residentMB = kb / 1024
		}
	}
	return u
}

// servicePortSockets is how many sockets the server's process holds with port at one end: the
// connections of calls that come back to the process through its own service port. Counting
// these, not every descriptor, keeps what the process opens for other reasons on a loaded
// machine (etcd's files and peers, the store's) out of the comparison.
func servicePortSockets(t *testing.T, s *server, port string) int {
	t.Helper()
	want, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(s.cmd.Process.Pid)
	onPort := map[string]bool{} // socket inode -> an end is the port
	for _, table := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(filepath.Join("/proc", pid, "net", table))
		if err != nil {
			t.Skipf("no /proc here: %v", err)
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 10 {
				continue
			}
			portOf := func(addr string) uint64 {
				_, hex, _ := strings.Cut(addr, ":")
				v, _ := strconv.ParseUint(hex, 16, 16)
				return v
			}
			if portOf(fields[1]) == want || portOf(fields[2]) == want {
				onPort[fields[9]] = true
			}
		}
	}
	fds, err := os.ReadDir(filepath.Join("/proc", pid, "fd"))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	n := 0
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc", pid, "fd", fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") && onPort[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			n++
		}
	}
	return n
}

// A Tool whose provider is the platform's own /mcp and whose tool is itself, called at /mcp:
// every call the platform makes to a provider says how deeply it is nested, and /mcp refuses a
// call made inside MaxCallDepth (3) nested calls, so the call answers at once with an error
// after three nested calls, and the process holds no more descriptors, threads or memory than
// before. (It used to recurse until the Tool was disabled: the outer call answered after the
// provider's 30 s timeout while the nested calls went on, thousands of them.)
func TestAToolThatCallsItselfThroughThePlatformsOwnMCPIsRefusedPastTheDepthLimitAndLeavesNothingBehind(t *testing.T) {
	requireKubectl(t)
	g := NewWithT(t)
	// At info level: each tool call reaching /mcp is a log line, which the test counts.
	s, err := startServerEnv(filepath.Join(t.TempDir(), "data"), []string{"PLATFORM_ENVIRONMENT=Testing", "Platform__Authentication__Mode=Development"},
		"--log-level", "info")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if code, _, err := s.stop(); err != nil || code != 0 {
			t.Errorf("server did not stop cleanly (exit code %d, %v):\n%s", code, err, s.output())
		}
	})
	base := s.ServiceURL(t)
	c := serviceClient{t: t, base: base}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if status, _ := c.call(http.MethodGet, "/api/agents", ""); status == http.StatusOK {
			break
		}
	}
	c.must(http.StatusCreated, http.MethodPost, "/api/toolproviders", `{"apiVersion":"platform/v1","kind":"ToolProvider",`+
		`"metadata":{"name":"self"},"definition":{"protocol":"MCP","transport":"StreamableHttp","timeoutSeconds":30,`+
		`"http":{"url":"`+base+`/mcp"}}}`)
	// A Tool "loop" of the provider self whose tool at the provider is "loop": itself.
	s.mustKubectl(t, "apply", "-n", "default", "-f", writeManifest(t, fromYAML(t, `apiVersion: platform.dev/v1
kind: Tool
metadata:
  name: loop
definition:
  provider:
    name: self
  toolName: loop
  enabled: true
`)))
	client := &http.Client{Timeout: 90 * time.Second}
	// Warm up: the provider's session and the process's pools, so the usage after compares.
	status, body, err := mcpPost(client, base, "", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(status).To(Equal(http.StatusOK), string(body))
	g.Expect(string(body)).To(ContainSubstring(`"name":"loop"`))
	time.Sleep(time.Second)
	before := usageOf(t, s)
	_, port, _ := strings.Cut(strings.TrimPrefix(base, "http://"), ":")
	socketsBefore := servicePortSockets(t, s, port)

	began := time.Now()
	status, body, err = mcpPost(client, base, "", []byte(toolCall(2, "loop", `{}`)))
	took := time.Since(began)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(status).To(Equal(http.StatusOK), string(body))
	var answer struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	g.Expect(json.Unmarshal(body, &answer)).To(Succeed(), string(body))
	g.Expect(answer.Result.IsError).To(BeTrue(), string(body))
	g.Expect(answer.Result.Content).NotTo(BeEmpty(), string(body))
	g.Expect(answer.Result.Content[0].Text).To(ContainSubstring("limit of nested or concurrent tool calls"), string(body))
	g.Expect(took).To(BeNumerically("<", 10*time.Second), "the call answers at once, not after the provider's timeout")

	nested := func() int { return strings.Count(s.stdout.String()+s.stderr.String(), "tool called at /mcp") }
	g.Expect(nested()).To(Equal(3), "the outer call and two nested ones reached the tool; the third nested one was refused")
	time.Sleep(3 * time.Second)
	g.Expect(nested()).To(Equal(3), "no call goes on after the answer")
	g.Eventually(func(g Gomega) {
		after := usageOf(t, s)
		// Both ends of at most four pooled keep-alive connections of the provider's client.
		sockets := servicePortSockets(t, s, port)
		g.Expect(sockets).To(BeNumerically("<=", socketsBefore+8), "sockets on the service port %d -> %d", socketsBefore, sockets)
		g.Expect(after.threads).To(BeNumerically("<=", before.threads+4), "threads %d -> %d", before.threads, after.threads)
		g.Expect(after.residentMB).To(BeNumerically("<=", before.residentMB+64), "resident MB %d -> %d", before.residentMB, after.residentMB)
	}).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())

	// A request that says it is nested deeper than the limit is refused as a JSON-RPC error.
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(toolCall(3, "platform_get_task", `{"id":"x"}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Platform-Tool-Call-Depth", "3")
	resp, err := client.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	g.Expect(string(body)).To(And(ContainSubstring(`"code":-32050`), ContainSubstring("nest at most 3 deep")))
}

// A JSON-RPC batch over 32 messages is refused whole with a JSON-RPC error before any of its
// calls runs: 6,000 calls in one 1 MiB body, sent over and over by a workspace's client, leave
// the process's memory flat and another workspace's calls as fast as before (p99 under a
// generous bound on a loaded machine), while a batch within the limit is answered, its calls a
// few at a time. (Such a batch used to run every call at once: memory 440 -> 1,937 MB.)
func TestAJSONRPCBatchOverTheLimitIsRefusedWholeAndLeavesOtherWorkspacesServed(t *testing.T) {
	g := NewWithT(t)
	s := mustStartServer(t, filepath.Join(t.TempDir(), "data"))
	base := s.ServiceURL(t)
	admin := bootstrapAlphaAndBeta(t, base)
	admin.must(http.StatusCreated, http.MethodPost, "/api/identity/accounts/", "", map[string]any{
		"username": "bob", "password": e2ePassword, "workspace": "beta", "role": "Member"})
	pat := func(username, workspace string) string {
		user := &api{t: t, base: base}
		user.must(http.StatusOK, http.MethodPost, "/api/auth/local/login", "", map[string]any{"username": username, "password": e2ePassword})
		out := user.must(http.StatusCreated, http.MethodPost, "/api/identity/pat", "", map[string]any{
			"name": "mcp", "workspace": workspace, "expiresInDays": 7,
			"permissions": []string{"workspaces/read", "resources/read", "runs/read", "runs/execute"}})
		return out["token"].(string)
	}
	flooder, other := pat("admin", "alpha"), pat("bob", "beta")
	client := &http.Client{Timeout: 60 * time.Second}

	batch := func(n int, tool, arguments string) []byte {
		calls := make([]string, n)
		for i := range calls {
			calls[i] = toolCall(i+1, tool, arguments)
		}
		return []byte("[" + strings.Join(calls, ",") + "]")
	}
	huge := batch(6000, "platform_open_interaction", `{"entry":"quick-answer","input":{"question":"again?"}}`)
	g.Expect(len(huge)).To(BeNumerically("<", 1<<20))

	// Within the limit: every call is answered.
	status, body, err := mcpPost(client, base, flooder, batch(32, "platform_list_entries", `{}`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(status).To(Equal(http.StatusOK), string(body))
	var answers []map[string]any
	g.Expect(json.Unmarshal(body, &answers)).To(Succeed(), string(body))
	g.Expect(answers).To(HaveLen(32))
	for _, a := range answers {
		g.Expect(a).To(HaveKey("result"), "%v", a)
	}
	// Over it: refused whole, at once.
	began := time.Now()
	status, body, err = mcpPost(client, base, flooder, huge)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(status).To(Equal(http.StatusBadRequest), string(body))
	g.Expect(string(body)).To(And(ContainSubstring(`"code":-32050`), ContainSubstring("at most 32 messages; none of this one's was run")))
	g.Expect(time.Since(began)).To(BeNumerically("<", 5*time.Second))
	// A body over 1 MiB is 413 Problem Details.
	status, body, err = mcpPost(client, base, flooder, append(huge, bytes.Repeat([]byte(" "), 1<<20)...))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(status).To(Equal(http.StatusRequestEntityTooLarge), string(body))
	g.Expect(string(body)).To(ContainSubstring(`"status":413`))

	// The other workspace's simple calls, alone and then while alpha's client floods /mcp.
	otherCall := []byte(toolCall(1, "platform_get_flow_run", `{"id":"no-such-run"}`))
	latencies := func(n int) []time.Duration {
		var out []time.Duration
		for range n {
			began := time.Now()
			status, body, err := mcpPost(client, base, other, otherCall)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(status).To(Equal(http.StatusOK), string(body))
			g.Expect(string(body)).To(ContainSubstring("404 Not Found"))
			out = append(out, time.Since(began))
		}
		slices.Sort(out)
		return out
	}
	quiet := latencies(50)
	before := usageOf(t, s)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	floods, refusedFloods := 0, 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				status, _, err := mcpPost(client, base, flooder, huge)
				mu.Lock()
				floods++
				if err == nil && (status == http.StatusBadRequest || status == http.StatusTooManyRequests) {
					refusedFloods++
				}
				mu.Unlock()
			}
		}()
	}
	busy := latencies(100)
	close(stop)
	wg.Wait()
	after := usageOf(t, s)

	p99 := func(d []time.Duration) time.Duration { return d[len(d)*99/100] }
	t.Logf("other workspace's p99: %s alone, %s during %d batches of 6,000 calls; resident memory %d -> %d MB",
		p99(quiet), p99(busy), floods, before.residentMB, after.residentMB)
	g.Expect(refusedFloods).To(Equal(floods), "every batch of 6,000 calls was refused (400, or 429 past the requests a caller may have served at once)")
	g.Expect(floods).To(BeNumerically(">", 10))
	g.Expect(p99(busy)).To(BeNumerically("<", max(2*time.Second, 5*p99(quiet))), "the other workspace's p99")
	g.Expect(after.residentMB).To(BeNumerically("<", before.residentMB+150), "resident memory stays flat")
}
