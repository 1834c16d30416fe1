package e2e

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Idle connections beyond the process's descriptor limit (here 4,096) leave the service API and
// the kube API answering others within a second, and the process alive: each listener caps its
// connections and closes idle ones to make room, with headroom kept for the store and etcd
// (which used to exit with "too many open files", taking the process with it).
func TestIdleConnectionsBeyondTheDescriptorLimitLeaveThePlatformServingOthers(t *testing.T) {
	g := NewWithT(t)
	s, err := launchServerLimited(filepath.Join(t.TempDir(), "data"), nil, 4096)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if code, _, err := s.stop(); err != nil || code != 0 {
			t.Errorf("server did not stop cleanly (exit code %d, %v):\n%s", code, err, s.output())
		}
	})
	service := s.ServiceURL(t)
	serviceAddr := service[len("http://"):]

	// Keep-alive connections that had one answer each, and kube API connections that never
	// start their TLS handshake: 5,000 in all.
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for i := range 3500 {
		c, err := net.Dial("tcp", serviceAddr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		held = append(held, c)
		if _, err := io.WriteString(c, "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			continue // closed to make room: the cap at work
		}
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			resp.Body.Close()
		}
	}
	for i := range 1500 {
		c, err := net.Dial("tcp", s.Address)
		if err != nil {
			t.Fatalf("kube API connection %d: %v", i, err)
		}
		held = append(held, c)
	}
	time.Sleep(1500 * time.Millisecond) // idle long enough to be closed for newcomers

	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig())
	g.Expect(err).NotTo(HaveOccurred())
	kube, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	for i := range 5 {
		began := time.Now()
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(service + "/livez")
		g.Expect(err).NotTo(HaveOccurred(), "liveness %d", i)
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		g.Expect(time.Since(began)).To(BeNumerically("<", time.Second), "liveness %d", i)

		began = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		cancel()
		g.Expect(err).NotTo(HaveOccurred(), "authenticated read %d", i)
		g.Expect(time.Since(began)).To(BeNumerically("<", time.Second), "authenticated read %d", i)
	}
	select {
	case <-s.exited:
		t.Fatalf("the server exited:\n%s", s.output())
	default:
	}
}

// A clean SIGTERM stops the platform without an error line: the controllers hand their Lease
// over and nothing reports it lost, with a stack trace, on the way out.
func TestACleanSIGTERMLogsNoError(t *testing.T) {
	g := NewWithT(t)
	// At info level, to see when the controllers have started (and any error line, as at warn).
	s, err := startServer(filepath.Join(t.TempDir(), "data"), "--log-level", "info")
	g.Expect(err).NotTo(HaveOccurred())
	// Once every controller of the term has started its workers (a SIGTERM during the start
	// makes controller-runtime report the caches it could not fill).
	started := func() bool {
		out := s.stderr.String()
		return strings.Contains(out, "controllers start") && strings.Count(out, `"msg":"Starting workers"`) > 10 &&
			strings.Count(out, `"msg":"Starting workers"`) == strings.Count(out, `"msg":"Starting Controller"`)
	}
	g.Eventually(started).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(BeTrue())
	g.Consistently(started).WithTimeout(time.Second).Should(BeTrue())
	code, _, err := s.stop()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(BeZero())
	g.Expect(s.stderr.String()).NotTo(Or(ContainSubstring("stacktrace"), ContainSubstring(`"level":"error"`),
		ContainSubstring("leader election lost")), s.output())
}
