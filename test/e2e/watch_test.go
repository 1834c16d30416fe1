package e2e

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestWatchSeesAgentCreatedAfterItStarted(t *testing.T) {
	s := shared(t)
	const namespace = "watched"
	s.mustKubectl(t, "create", "namespace", namespace)
	t.Cleanup(func() { s.kubectl("delete", "namespace", namespace, "--wait=false") })
	s.mustKubectl(t, "apply", "-f", writeManifest(t, sampleAgent(t, "before-watch", namespace)))

	w := startWatch(t, s, "get", "agents", "--namespace", namespace, "--watch", "--output", "name")
	// The agent that existed before comes from the initial list; once it is printed the watch
	// continues from that list's resourceVersion, so anything created now is an event.
	w.await(t, "agent.platform.dev/before-watch")
	s.mustKubectl(t, "apply", "-f", writeManifest(t, sampleAgent(t, "after-watch", namespace)))
	w.await(t, "agent.platform.dev/after-watch")
}

func TestSIGTERMStopsTheServerWithin15sDespiteOpenWatches(t *testing.T) {
	requireKubectl(t)
	t.Parallel()
	g := NewWithT(t)
	s := mustStartServer(t, filepath.Join(t.TempDir(), "data"))
	s.mustKubectl(t, "apply", "-f", samplePath)

	// Every controller holds watches like these, on native and custom resources; stopping must
	// not wait for the clients to leave.
	startWatch(t, s, "get", "namespaces", "--watch", "--output", "name").await(t, "namespace/default")
	startWatch(t, s, "get", "agents", "--all-namespaces", "--watch", "--output", "name").await(t, "agent.platform.dev/support-triage")

	code, took, err := s.stop()
	g.Expect(err).NotTo(HaveOccurred(), s.output())
	g.Expect(code).To(Equal(0), s.output())
	g.Expect(took).To(BeNumerically("<", stopTimeout), s.output())
}

// watcher is a background kubectl whose stdout lines the test reads.
type watcher struct {
	lines  <-chan string
	stderr *syncBuffer
	seen   []string
}

// startWatch runs kubectl with args in the background until the test ends.
func startWatch(t *testing.T, s *server, args ...string) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, kubectlBinary, args...)
	cmd.Env = append(cmd.Environ(), "KUBECONFIG="+s.Kubeconfig(), "KUBECACHEDIR="+kubeCacheDir)
	cmd.SysProcAttr = childProcAttr()
	w := &watcher{stderr: &syncBuffer{}}
	cmd.Stderr = w.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	w.lines = lines
	go func() {
		defer close(lines)
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			lines <- scanner.Text()
		}
	}()
	t.Cleanup(func() {
		cancel()
		for range lines { // drain, so the reader ends before Wait closes the pipe
		}
		_ = cmd.Wait()
	})
	return w
}

// await reads lines until want appears; it fails the test after 30 s or when the output ends.
func (w *watcher) await(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-w.lines:
			if !ok {
				t.Fatalf("watch ended before %q; printed %q; stderr:\n%s", want, w.seen, w.stderr)
			}
			w.seen = append(w.seen, line)
			if line == want {
				return
			}
		case <-timeout:
			t.Fatalf("watch did not print %q within 30s; printed %q; stderr:\n%s", want, w.seen, w.stderr)
		}
	}
}
