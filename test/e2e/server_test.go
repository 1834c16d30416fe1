package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const (
	readyLinePrefix = "kube API ready at https://"
	// serviceLinePrefix starts the line that tells where the service API listens.
	serviceLinePrefix = "service API ready at http://"
	// readyTimeout bounds a start on a loaded 2-core machine; a normal start takes a few seconds.
	readyTimeout = 90 * time.Second
	// stopTimeout is how long a SIGTERMed server may take to exit cleanly.
	stopTimeout = 15 * time.Second
)

// server is a running `platform serve` child process.
type server struct {
	DataDir string
	// Address is the host:port printed on the ready line.
	Address string
	// serviceAddr is the host:port of the service API, printed after the ready line.
	serviceAddr chan string

	cmd      *exec.Cmd
	stopping atomic.Bool // set by stop: an exit before that is a crash
	stdout   *syncBuffer
	stderr   *syncBuffer
	exited   chan struct{}
	err      error // of cmd.Wait, once exited is closed
}

// startServer runs `platform serve --data-dir dataDir` on a free loopback port and waits for its
// ready line. A port that another process took between picking and binding is retried.
func startServer(dataDir string, extraArgs ...string) (*server, error) {
	return startServerEnv(dataDir, nil, extraArgs...)
}

// startServerEnv is startServer with env added to the server's environment.
func startServerEnv(dataDir string, env []string, extraArgs ...string) (*server, error) {
	var err error
	for range 3 {
		var s *server
		s, err = launchServer(dataDir, env, extraArgs...)
		if err == nil {
			return s, nil
		}
		if !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
	}
	return nil, err
}

func launchServer(dataDir string, env []string, extraArgs ...string) (*server, error) {
	return launchServerLimited(dataDir, env, 0, extraArgs...)
}

// launchServerLimited is launchServer with the process's descriptor limit set to openFiles
// (unchanged when 0).
func launchServerLimited(dataDir string, env []string, openFiles int, extraArgs ...string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--data-dir", dataDir, "--kube-addr", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		"--http-addr", "127.0.0.1:0"}, extraArgs...)
	cmd := exec.Command(platformBinary, args...)
	if openFiles > 0 {
		// The shell sets the limit and becomes the platform (exec), so signals reach it.
		cmd = exec.Command("/bin/sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, openFiles), platformBinary}, args...)...)
	}
	s := &server{
		DataDir: dataDir,
		cmd:     cmd,
		stdout:  &syncBuffer{},
		stderr:  &syncBuffer{},
		exited:  make(chan struct{}),

		serviceAddr: make(chan string, 1),
	}
	s.cmd.Stderr = s.stderr
	s.cmd.SysProcAttr = childProcAttr()
	if env != nil {
		s.cmd.Env = append(os.Environ(), env...)
	}
	pipe, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}

	ready := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		scanner := bufio.NewScanner(pipe)
		for scanner.Scan() {
			line := scanner.Text()
			s.stdout.Write([]byte(line + "\n"))
			if addr, ok := strings.CutPrefix(line, readyLinePrefix); ok {
				select {
				case ready <- addr:
				default:
				}
			}
			if rest, ok := strings.CutPrefix(line, serviceLinePrefix); ok {
				addr, _, _ := strings.Cut(rest, " ")
				select {
				case s.serviceAddr <- addr:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pipe)
	}()
	go func() {
		<-copied // Wait closes the pipe; read it to the end first
		s.err = s.cmd.Wait()
		close(s.exited)
	}()

	select {
	case s.Address = <-ready:
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("platform serve exited before it was ready (%v):\n%s", s.err, s.output())
	case <-time.After(readyTimeout):
		s.kill()
		return nil, fmt.Errorf("platform serve not ready after %s:\n%s", readyTimeout, s.output())
	}
}

// mustStartServer starts a server for one test and stops it when the test ends.
func mustStartServer(t *testing.T, dataDir string, extraArgs ...string) *server {
	t.Helper()
	s, err := startServer(dataDir, extraArgs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-s.exited:
			if !s.stopping.Load() {
				t.Errorf("server exited on its own (%v):\n%s", s.err, s.output())
			}
			return
		default:
		}
		if code, _, err := s.stop(); err != nil || code != 0 {
			t.Errorf("server did not stop cleanly (exit code %d, %v):\n%s", code, err, s.output())
		}
	})
	return s
}

// stop sends SIGTERM and waits up to stopTimeout for the process to exit; past that it is killed
// and an error returned. It reports the exit code and how long the shutdown took.
func (s *server) stop() (exitCode int, took time.Duration, err error) {
	s.stopping.Store(true)
	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return -1, 0, err
	}
	select {
	case <-s.exited:
		return s.cmd.ProcessState.ExitCode(), time.Since(start), nil
	case <-time.After(stopTimeout):
		s.kill()
		return -1, time.Since(start), fmt.Errorf("still running %s after SIGTERM; killed", stopTimeout)
	}
}

func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// output is what the server printed so far, for failure messages.
func (s *server) output() string {
	return "--- stdout\n" + s.stdout.String() + "--- stderr (last lines)\n" + lastLines(s.stderr.String(), 30)
}

// Kubeconfig is the kubeconfig `platform serve` writes into its data directory.
func (s *server) Kubeconfig() string { return filepath.Join(s.DataDir, "admin.kubeconfig") }

// ServiceURL is the http URL of the service API.
func (s *server) ServiceURL(t *testing.T) string {
	t.Helper()
	select {
	case addr := <-s.serviceAddr:
		s.serviceAddr <- addr
		return "http://" + addr
	case <-time.After(readyTimeout):
		t.Fatalf("the service API address was not printed:\n%s", s.output())
		return ""
	}
}

// URL is the https URL of the kube API.
func (s *server) URL() string { return "https://" + s.Address }

// runResult is the outcome of a command that ran to its end.
type runResult struct {
	Args     []string
	Stdout   string
	Stderr   string
	ExitCode int
	Took     time.Duration
}

func (r runResult) String() string {
	return fmt.Sprintf("%s (exit code %d, %s)\n--- stdout\n%s--- stderr\n%s", strings.Join(r.Args, " "), r.ExitCode, r.Took.Round(time.Millisecond), r.Stdout, elide(r.Stderr, 30))
}

// elide keeps the first and last n lines of a long text (a panic's stack, a server's log).
func elide(text string, n int) string {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) <= 2*n {
		return text
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("[... %d lines ...]\n", len(lines)-2*n) + strings.Join(lines[len(lines)-n:], "")
}

// run executes a command to its end (or until timeout, when it is killed), with env added to
// the test's environment.
func run(timeout time.Duration, stdin string, env []string, name string, args ...string) runResult {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(cmd.Environ(), env...)
	cmd.WaitDelay = 2 * time.Second
	cmd.SysProcAttr = childProcAttr()
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := runResult{Args: append([]string{filepath.Base(name)}, args...), Stdout: stdout.String(), Stderr: stderr.String(), Took: time.Since(start)}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		r.ExitCode = exitErr.ExitCode()
	default:
		r.ExitCode = -1
		r.Stderr += "\n(e2e: " + err.Error() + ")"
	}
	if ctx.Err() != nil {
		r.Stderr += fmt.Sprintf("\n(e2e: killed after %s)", timeout)
	}
	return r
}

// platform runs the platform binary to its end, for commands that do not serve.
func platform(timeout time.Duration, args ...string) runResult {
	return run(timeout, "", nil, platformBinary, args...)
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(text string, n int) string {
	lines := strings.SplitAfter(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "") + "\n"
}

// lastLine is the last non-empty line of text.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return lines[len(lines)-1]
}

// syncBuffer is a bytes.Buffer that a process and the test may use at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
