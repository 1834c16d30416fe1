package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// sessionClient calls the service API with the session cookie of the first administrator.
type sessionClient struct {
	base   string
	cookie string
}

func (c sessionClient) do(method, path, body string) (int, map[string]any, error) {
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cookie != "" {
		req.Header.Set("Cookie", c.cookie)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, nil
}

// Three thousand run streams asked for with one session leave /livez and an authenticated read
// answering within a second and the process alive: streams wait on notifications instead of
// polling the store, and beyond a caller's share they are refused with 429 Problem Details.
func TestThreeThousandStreamRequestsLeaveThePlatformServingOthers(t *testing.T) {
	requireKubectl(t)
	g := NewWithT(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	g.Expect(err).NotTo(HaveOccurred())
	s := mustStartServer(t, filepath.Join(t.TempDir(), "data"))
	base := s.ServiceURL(t)

	// The first administrator, in workspace default, and the offline quickstart flow (which the
	// platform publishes once applied).
	req, _ := http.NewRequest(http.MethodPost, base+"/api/auth/bootstrap", strings.NewReader(
		`{"username":"admin","password":"Change-me-1st!","tenantName":"Acme","workspaceName":"default"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusCreated))
	var cookies []string
	for _, c := range resp.Cookies() {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	api := sessionClient{base: base, cookie: strings.Join(cookies, "; ")}
	for _, dir := range []string{"samples", "quickstart"} {
		kubectl := exec.Command(kubectlBinary, "apply", "-n", "default", "-f", filepath.Join(root, "config", dir))
		kubectl.Env = append(os.Environ(), "KUBECONFIG="+s.Kubeconfig(), "KUBECACHEDIR="+kubeCacheDir)
		out, err := kubectl.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	}
	var run map[string]any
	g.Eventually(func() any {
		_, body, _ := api.do(http.MethodPost, "/api/work/workitems?waitSeconds=10",
			`{"type":"report","title":"Q3","instruction":"Prepare it","flowReference":{"name":"report"}}`)
		run, _ = body["flowRun"].(map[string]any)
		return run["state"]
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal("ActionRequired"))
	runID := run["id"].(string)

	addr := strings.TrimPrefix(base, "http://")
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	statuses := map[int]int{}
	for i := range 3000 {
		c, err := net.Dial("tcp", addr)
		g.Expect(err).NotTo(HaveOccurred(), "stream %d", i)
		held = append(held, c)
		fmt.Fprintf(c, "GET /api/flowRuns/%s/stream HTTP/1.1\r\nHost: x\r\nCookie: %s\r\n\r\n", runID, api.cookie)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		g.Expect(err).NotTo(HaveOccurred(), "stream %d", i)
		statuses[resp.StatusCode]++
		if resp.StatusCode != http.StatusOK {
			g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/problem+json"))
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	g.Expect(statuses).To(Equal(map[int]int{http.StatusOK: 16, http.StatusTooManyRequests: 2984}))

	for i := range 5 {
		began := time.Now()
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(base + "/livez")
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		g.Expect(time.Since(began)).To(BeNumerically("<", time.Second), "liveness %d", i)

		began = time.Now()
		status, _, err := api.do(http.MethodGet, "/api/flowRuns/"+runID, "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(status).To(Equal(http.StatusOK))
		g.Expect(time.Since(began)).To(BeNumerically("<", time.Second), "authenticated read %d", i)
	}
	select {
	case <-s.exited:
		t.Fatalf("the server exited:\n%s", s.output())
	default:
	}
}
