package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/test/signalr/signalrtest"
)

// readmeScript is every sh block of the README in order, as one bash script. Lines that run make
// are left out: `make run` is the server the test starts itself, `make test` the suite this test
// is part of, and the other targets are checked by the Makefile's own use.
func readmeScript(t *testing.T, readme, serviceAddr string) string {
	t.Helper()
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(readme, -1)
	if len(blocks) < 5 {
		t.Fatalf("the README has %d sh blocks", len(blocks))
	}
	var b strings.Builder
	b.WriteString("set -euo pipefail\nset -x\n")
	for _, block := range blocks {
		for _, line := range strings.Split(block[1], "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "make ") {
				continue
			}
			line = strings.ReplaceAll(line, "localhost:5100", serviceAddr)
			b.WriteString(strings.ReplaceAll(line, "127.0.0.1:5100", serviceAddr) + "\n")
		}
	}
	return b.String()
}

// Every command of the README works as written on a fresh clone, in the order it gives, against a
// server started as `make run` starts it: the test only points the commands at the ports it picked
// and runs them where a clone's config/ and .data/ would be.
func TestTheREADMECommandsWorkAsWritten(t *testing.T) {
	requireKubectl(t)
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH (.ci/run installs it)", tool)
		}
	}
	signalrtest.Available(t)
	g := NewWithT(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	g.Expect(err).NotTo(HaveOccurred())
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	g.Expect(err).NotTo(HaveOccurred())

	clone := t.TempDir()
	g.Expect(os.Symlink(filepath.Join(root, "config"), filepath.Join(clone, "config"))).To(Succeed())
	g.Expect(os.MkdirAll(filepath.Join(clone, "bin"), 0o755)).To(Succeed())
	// The hub's walkthrough runs test/signalr/listen.mjs with its installed client.
	g.Expect(os.MkdirAll(filepath.Join(clone, "test"), 0o755)).To(Succeed())
	g.Expect(os.Symlink(filepath.Join(root, "test", "signalr"), filepath.Join(clone, "test", "signalr"))).To(Succeed())
	g.Expect(os.Symlink(platformBinary, filepath.Join(clone, "bin", "platform"))).To(Succeed())
	s, err := startServerEnv(filepath.Join(clone, ".data"), []string{"PLATFORM_ENVIRONMENT=Development"})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if code, _, err := s.stop(); err != nil || code != 0 {
			t.Errorf("server did not stop cleanly (exit code %d, %v):\n%s", code, err, s.output())
		}
	})
	serviceAddr := strings.TrimPrefix(s.ServiceURL(t), "http://")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", readmeScript(t, string(readme), serviceAddr))
	cmd.Dir = clone
	cmd.Env = append(withoutKubeconfig(os.Environ()), "KUBECACHEDIR="+kubeCacheDir)
	// The walkthroughs start servers in the background (an extension, a registry, a second
	// platform) and stop them at their end; a failure or the timeout in between stops them here.
	cmd.SysProcAttr = scriptProcAttr()
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	out, err := cmd.CombinedOutput()
	g.Expect(killGroup(cmd.Process.Pid)).To(Succeed())
	// The script's last lines go last: a failing command is what a reader of a cut log needs.
	g.Expect(err).NotTo(HaveOccurred(), "%s\n%s\n--- the script's last lines\n%s", out, s.output(), lastLines(string(out), 40))
	g.Expect(string(out)).To(And(ContainSubstring(`"state": "Completed"`), ContainSubstring(`"answer": "detailed"`),
		ContainSubstring("RunCompleted"), MatchRegexp(`(?m)^TaskStatusChanged \{.*"taskId"`),
		ContainSubstring(`"connection":"Connected"`), ContainSubstring("platform_list_entries enabled=false"),
		ContainSubstring(`"enabled":true`), MatchRegexp(`Entries over MCP: .*guided-request`),
		MatchRegexp(`Weather over MCP from an extension: Bergen: .*key of 17 characters`)), "%s", out)
	// A question expiring into each fallback.
	g.Expect(string(out)).To(And(ContainSubstring(`["fail",["PendingActionExpired","RunFailed"]]`),
		ContainSubstring(`["reject",["PendingActionExpired","RunCompleted"]]`), ContainSubstring(`["proceed",["PendingActionExpired","RunCompleted"]]`),
		ContainSubstring(`["escalate",["PendingActionEscalated","PendingActionExpired","RunFailed"]]`)), "%s", out)
	// Compose a Pack: the second project's digest and the downloaded archive's sha256 are the same.
	digests := regexp.MustCompile(`(?m)^sha256:[0-9a-f]{64}$`).FindAllString(string(out), -1)
	g.Expect(digests).To(HaveLen(2), "%s", out)
	g.Expect(digests[1]).To(Equal(digests[0]), "the same selection gives the same archive, and the download is it")
	g.Expect(string(out)).To(ContainSubstring(`{"name":"openai-api-key","targetKind":"secret"}`), "%s", out)
	// The Pack walkthrough: installed into the second workspace, updated by one resource, rolled
	// back, and uninstalled keeping the resource a person changed.
	g.Expect(string(out)).To(And(ContainSubstring(`["installed","1.0.0","needs configuration","acme.support-kit",4,4]`),
		ContainSubstring(`["Agent","support-triage","update","definition.instructions"]`), ContainSubstring(`["installed","1.1.0","1.0.0"]`),
		ContainSubstring(`["installed","1.0.0","1.1.0"]`), ContainSubstring(`[409,"Conflict",["Agent","support-triage","changed since installed"]]`),
		ContainSubstring(`{"state":"degraded","preserved":[{"kind":"Agent","name":"support-triage","reason":"modified since installed"}]}`)), "%s", out)
	// The registry walkthrough: a folder served over HTTPS with its own CA, refreshed twice (the
	// second a 304), found in discovery with the publisher status the trusted registry asserts,
	// imported with the archive digest `platform pack build` wrote, and installed from the registry
	// with its provenance, as the API and kubectl show it.
	g.Expect(string(out)).To(And(MatchRegexp(`(?m)^succeeded$`), MatchRegexp(`(?m)^notModified$`),
		ContainSubstring(`["samples","hello-pack","1.0.0","Verified","Verified","fresh"]`),
		ContainSubstring(`[true,"this-machine","samples","hello-pack","1.0.0","Verified",true]`),
		ContainSubstring(`["installed","1.0.0","ready","samples.hello-pack"]`),
		ContainSubstring(`["Registry","this-machine",true,true,true,true]`),
		MatchRegexp(`(?m)^samples\.hello-pack\s+samples\s+hello-pack\s+1\.0\.0\s+Installed\s+Ready\s`),
		MatchRegexp(`(?m)^Registry this-machine$`)), "%s", out)
	// A rejected follow-up, and a 429 with Retry-After.
	g.Expect(string(out)).To(And(ContainSubstring(`[409,"FollowUpRejected"]`), ContainSubstring("Retry-After: 1"),
		ContainSubstring(`[429,"RateLimited","TokenRequestsPerSecond"]`), ContainSubstring(`{"tokenRequestsPerSecond":2,"refused":true}`)), "%s", out)
	// A run pausing at its budget and resuming once approved, with its usage.
	g.Expect(string(out)).To(And(ContainSubstring(`["ActionRequired","polish","approval","Agent","frugal",20]`),
		ContainSubstring(`["completed","Completed"]`), ContainSubstring(`[2,true,["draft","polish"]]`),
		ContainSubstring(`{"agent":"frugal","modelCalls":2}`), ContainSubstring(`["Agent","Day",20,true]`), ContainSubstring(`[400,"query.from"]`),
		MatchRegexp(`(?m)^2 Completed$`)), "%s", out)
}

func withoutKubeconfig(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			out = append(out, kv)
		}
	}
	return out
}
