package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// The README's "Running a cluster" try-out works as written on a fresh clone: its bash block runs
// where a clone's config/ and bin/platform would be, with only its ports moved to free ones (the
// block's 7070-7079 become PLATFORM_CLUSTER_PORT and the nine after it) and the binary built once
// for the package instead of by its first line.
func TestTheREADMEsClusterTryOutWorksAsWritten(t *testing.T) {
	requireTools(t)
	for _, tool := range []string{"kubectl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH", tool)
		}
	}
	g := NewWithT(t)
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	g.Expect(err).NotTo(HaveOccurred())
	_, section, ok := strings.Cut(string(readme), "\n## Running a cluster\n")
	g.Expect(ok).To(BeTrue(), "the README has a section Running a cluster")
	section, _, _ = strings.Cut(section, "\n## ")
	block := regexp.MustCompile("(?s)```bash\n(.*?)```").FindStringSubmatch(section)
	g.Expect(block).NotTo(BeNil(), "the section has a bash block")

	base := freePortRange(t, 10)
	ports := regexp.MustCompile(`127\.0\.0\.1:70(7[0-9])\b`)
	var script strings.Builder
	script.WriteString("set -euo pipefail\nset -x\n")
	for _, line := range strings.Split(block[1], "\n") {
		if strings.TrimSpace(line) == "go build -o bin/platform ." {
			continue
		}
		script.WriteString(ports.ReplaceAllStringFunc(line, func(m string) string {
			p, _ := strconv.Atoi(m[len(m)-4:])
			return fmt.Sprintf("127.0.0.1:%d", base+p-7070)
		}) + "\n")
	}

	// Not t.TempDir, whose parent is private: as root, PostgreSQL runs as the postgres user, who
	// must reach its data directory inside the clone's .cluster.
	clone, err := os.MkdirTemp("", "platform-readme-cluster-")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.Chmod(clone, 0o755)).To(Succeed())
	g.Expect(os.Symlink(filepath.Join(repoRoot, "config"), filepath.Join(clone, "config"))).To(Succeed())
	g.Expect(os.MkdirAll(filepath.Join(clone, "bin"), 0o755)).To(Succeed())
	g.Expect(os.Symlink(platformBinary, filepath.Join(clone, "bin", "platform"))).To(Succeed())
	env := append(withoutKubeconfig(os.Environ()), "PLATFORM_CLUSTER_PORT="+strconv.Itoa(base), "KUBECACHEDIR="+filepath.Join(clone, ".kube-cache"))
	t.Cleanup(func() {
		// The block stops its cluster at its end; a failure before leaves it to stop here.
		stop := exec.Command("bash", filepath.Join(clone, "config", "cluster", "cluster.sh"), "stop")
		stop.Dir, stop.Env = clone, env
		if out, err := stop.CombinedOutput(); err != nil {
			t.Errorf("cluster.sh stop: %v\n%s", err, out)
		}
		if pg, err := os.ReadFile(filepath.Join(clone, ".cluster", "postgres.path")); err == nil {
			os.RemoveAll(strings.TrimSpace(string(pg)))
		}
		os.RemoveAll(clone)
	})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir, cmd.Env = clone, env
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	g.Expect(string(out)).To(And(ContainSubstring("replica 3 ready at http://127.0.0.1:"+strconv.Itoa(base+9)),
		MatchRegexp(`(?m)^"Completed"$`), MatchRegexp(`(?m)^replica 2: \{"status":"ok"\}$`),
		MatchRegexp(`(?m)^etcd member-3: healthy$`), ContainSubstring("stopped")), "%s", out)
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
