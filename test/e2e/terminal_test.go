//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// readyBlock is what `make run` prints on a clean start, in order, one line each; nothing else.
var readyBlock = []string{
	"kube API ready at https://127.0.0.1:{kube}\n",
	"kubeconfig: export KUBECONFIG=",
	"service API ready at http://127.0.0.1:{http} (OpenAPI: http://127.0.0.1:{http}/openapi/v1.json)\n",
	"Console ready at http://127.0.0.1:{http}/ ",
	"Workplace ready at http://127.0.0.1:{workplace} (API http://127.0.0.1:{http}/, hub http://127.0.0.1:{http}/hubs/workplace, session authentication)\n",
}

// errorLine is what a person reads as something gone wrong: make's "***" lines (Interrupt,
// Error n), klog's E lines, JSON logs at error level, panics.
var errorLine = regexp.MustCompile(`(?i)\*\*\*|error|^E\d{4} |panic|fail`)

// `make run` on the ports given as its variables (the server knowing the Workplace's) prints the ready block and nothing below warning
// level (no klog I or W lines, no controller "Starting" lines, no info JSON); the Workplace's line
// comes after the service API's, whose /readyz it waits for; Ctrl-C (SIGINT to the process group,
// as a terminal sends it) stops both processes with no error line.
func TestMakeRunPrintsOnlyTheReadyBlockAndCtrlCStopsItWithoutAnError(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not on PATH")
	}
	g := NewWithT(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	g.Expect(err).NotTo(HaveOccurred())
	ports := map[string]string{}
	for _, name := range []string{"http", "workplace", "kube"} {
		port, err := freePort()
		g.Expect(err).NotTo(HaveOccurred())
		ports[name] = strconv.Itoa(port)
	}
	// -o build: the test's own binary instead of a build into the source tree.
	cmd := exec.Command("make", "--no-print-directory", "-o", "build", "run", "PLATFORM="+platformBinary,
		"HTTP_PORT="+ports["http"], "WORKPLACE_PORT="+ports["workplace"], "KUBE_PORT="+ports["kube"],
		"DATA_DIR="+filepath.Join(t.TempDir(), "data"))
	cmd.Dir = root
	for _, kv := range os.Environ() {
		// Not the make of a `make test` around this test, nor a log level of the caller's.
		if name, _, _ := strings.Cut(kv, "="); name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" &&
			!strings.EqualFold(name, "Platform__Logging__Level") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// One stream, in the order a terminal shows it; its own process group, as a shell's job.
	output := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = output, output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	g.Expect(cmd.Start()).To(Succeed())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})

	g.Eventually(func(g Gomega) {
		select {
		case err := <-exited:
			exited <- err
			StopTrying(fmt.Sprintf("make run ended before it was ready (%v)", err)).Now()
		default:
		}
		g.Expect(output.String()).To(MatchRegexp(`Workplace ready at .*\n`))
	}).WithTimeout(readyTimeout).WithPolling(50*time.Millisecond).Should(Succeed(), "%s", output)
	started := output.String()

	lines := strings.SplitAfter(started, "\n")
	lines = lines[:len(lines)-1] // after the last newline
	g.Expect(lines).To(HaveLen(len(readyBlock)), "a clean start prints the ready block and nothing else:\n%s", started)
	for i, want := range readyBlock {
		for name, port := range ports {
			want = strings.ReplaceAll(want, "{"+name+"}", port)
		}
		g.Expect(lines[i]).To(HavePrefix(want), "line %d of:\n%s", i+1, started)
	}
	// What the Workplace line promises holds at once: its app config and the API answer.
	for _, url := range []string{"http://127.0.0.1:" + ports["workplace"] + "/config.json", "http://127.0.0.1:" + ports["http"] + "/readyz"} {
		resp, err := http.Get(url)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), url)
	}
	// The server sends sign-ins back to the Workplace on its port, not on the default one.
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirects.Get("http://127.0.0.1:" + ports["http"] + "/workplace/w/default")
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.Header.Get("Location")).To(Equal("http://127.0.0.1:" + ports["workplace"] + "/w/default"))

	g.Expect(syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)).To(Succeed())
	select {
	case err = <-exited:
	case <-time.After(stopTimeout):
		t.Fatalf("make run still runs %s after SIGINT:\n%s", stopTimeout, output)
	}
	// make dies of the SIGINT it got itself (a shell shows 130) or exits 0.
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		status := exit.Sys().(syscall.WaitStatus)
		g.Expect(status.Signaled() && status.Signal() == syscall.SIGINT).To(BeTrue(), "make ended with %v:\n%s", err, output)
	} else {
		g.Expect(err).NotTo(HaveOccurred())
	}
	all := output.String()
	for _, line := range strings.Split(strings.TrimPrefix(all, started), "\n") {
		g.Expect(line).NotTo(MatchRegexp(errorLine.String()), "after Ctrl-C:\n%s", all)
	}
	// Both processes are gone, not left behind by make: their ports are free again.
	for _, name := range []string{"http", "workplace", "kube"} {
		l, err := net.Listen("tcp", "127.0.0.1:"+ports[name])
		g.Expect(err).NotTo(HaveOccurred(), "the %s port after make run ended:\n%s", name, all)
		l.Close()
	}
}
