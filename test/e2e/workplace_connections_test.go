package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/listener"
)

// holdEnv makes this test binary hold idle connections instead of running tests (see
// holdConnectionsIfRequested): one process cannot hold more descriptors than its limit, so tests
// that need more idle connections than that spread them over helpers.
const holdEnv = "E2E_HOLD_CONNECTIONS"

// holdConnectionsIfRequested, with E2E_HOLD_CONNECTIONS="<addr> <count>", opens up to count
// connections to addr (three in four keep-alive connections after one answer, the rest never
// sending a byte), prints "held <n>" and holds them until its standard input closes. It stops
// opening early when a dial fails (the server takes no more) or after 30 s.
func holdConnectionsIfRequested() {
	spec := os.Getenv(holdEnv)
	if spec == "" {
		return
	}
	addr, countText, _ := strings.Cut(spec, " ")
	count, err := strconv.Atoi(countText)
	if err != nil {
		fmt.Println("bad", holdEnv, err)
		os.Exit(2)
	}
	held := make([]net.Conn, 0, count)
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < count && time.Now().Before(deadline); i++ {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			break
		}
		held = append(held, c)
		// Three in four ask once (the answer waits unread: a keep-alive connection idle after
		// its answer), the others never send a byte.
		if i%4 != 3 {
			_, _ = io.WriteString(c, "GET /config.json HTTP/1.1\r\nHost: x\r\n\r\n")
		}
	}
	fmt.Println("held", len(held))
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// startWorkplace starts `platform workplace` on a free port with a descriptor limit (0: the
// inherited one) and returns its address. No API answers behind it: /config.json needs none.
func startWorkplace(t *testing.T, openFiles int) string {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	// No API answers at the base URL: the host serves on its own, so it is waited for by its
	// /config.json (its ready line waits for the API it relays to).
	args := []string{"workplace", "--addr", addr, "--api-base-url", "http://127.0.0.1:9/"}
	cmd := exec.Command(platformBinary, args...)
	if openFiles > 0 {
		cmd = exec.Command("/bin/sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, openFiles), platformBinary}, args...)...)
	}
	cmd.SysProcAttr = childProcAttr()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatalf("platform workplace exited:\n%s", stderr.String())
		default:
		}
		if resp, err := client.Get("http://" + addr + "/config.json"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("platform workplace did not start:\n%s", stderr.String())
	return ""
}

// Idle connections far beyond the host's descriptor limit (here 20,000 under a limit of 4,096)
// leave the Workplace host answering /config.json within a second: its listener caps its
// connections and closes the quietest to make room, as the service API's does (it used to stop
// answering until the idle connections went).
func TestIdleConnectionsBeyondTheDescriptorLimitLeaveTheWorkplaceHostServingOthers(t *testing.T) {
	g := NewWithT(t)
	addr := startWorkplace(t, 4096)

	// Two helper processes hold 10,000 connections each: more than this process may open.
	var holders []*exec.Cmd
	held := make(chan string, 2)
	for range 2 {
		holder := exec.Command(os.Args[0], "-test.run=^$")
		holder.Env = append(os.Environ(), holdEnv+"="+addr+" 10000")
		holder.SysProcAttr = childProcAttr()
		stdin, err := holder.StdinPipe()
		g.Expect(err).NotTo(HaveOccurred())
		out, err := holder.StdoutPipe()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(holder.Start()).To(Succeed())
		holders = append(holders, holder)
		t.Cleanup(func() {
			stdin.Close()
			_ = holder.Process.Kill()
			_ = holder.Wait()
		})
		go func() {
			line, _ := bufio.NewReader(out).ReadString('\n')
			held <- strings.TrimSpace(line)
		}()
	}
	var lines []string
	for range holders {
		select {
		case line := <-held:
			lines = append(lines, line)
		case <-time.After(time.Minute):
			t.Fatal("the helpers did not open their connections")
		}
	}
	time.Sleep(1500 * time.Millisecond) // idle long enough to be closed for newcomers

	for i := range 5 {
		began := time.Now()
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/config.json")
		g.Expect(err).NotTo(HaveOccurred(), "config %d", i)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "config %d: %s", i, body)
		g.Expect(string(body)).To(ContainSubstring(`"authentication"`))
		g.Expect(time.Since(began)).To(BeNumerically("<", time.Second), "config %d", i)
	}
	// Every connection was accepted (and, beyond the cap, closed by the host): none was left
	// waiting in the kernel's backlog for a descriptor.
	g.Expect(lines).To(Equal([]string{"held 10000", "held 10000"}))
}

// A keep-alive connection of the Workplace host that sends no request is closed after the idle
// timeout of every server of the platform (it used to stay open for good).
func TestAnIdleKeepAliveConnectionToTheWorkplaceHostIsClosedAfterTheIdleTimeout(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	addr := startWorkplace(t, 0)
	c, err := net.Dial("tcp", addr)
	g.Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	_, err = io.WriteString(c, "GET /config.json HTTP/1.1\r\nHost: x\r\n\r\n")
	g.Expect(err).NotTo(HaveOccurred())
	reader := bufio.NewReader(c)
	resp, err := http.ReadResponse(reader, nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	answered := time.Now()

	// Nothing arrives until the host closes the connection: EOF, by the idle timeout and a margin.
	g.Expect(c.SetReadDeadline(answered.Add(listener.IdleTimeout + 10*time.Second))).To(Succeed())
	_, err = reader.ReadByte()
	g.Expect(err).To(MatchError(io.EOF), "the connection is still open %s after its answer", time.Since(answered).Round(time.Second))
	g.Expect(time.Since(answered)).To(BeNumerically(">=", listener.IdleTimeout-time.Second))
}
