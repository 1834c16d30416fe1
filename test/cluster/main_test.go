package cluster

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

var (
	// platformBinary is the `platform` command built once for the package; empty when skipped.
	platformBinary string
	// skipReason says why the package's tests skip, when they do.
	skipReason string
	// repoRoot is the repository, where config/cluster/cluster.sh lives.
	repoRoot string
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "cluster: skipped in -short mode (builds the binary and starts a cluster)")
		return 0
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		return 1
	}
	repoRoot = root
	skipReason = missingTools()
	if skipReason != "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "platform-cluster-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	platformBinary = filepath.Join(dir, "platform")
	// `go test` puts its own toolchain first on PATH, so this builds with the same Go.
	build := exec.Command("go", "build", "-o", platformBinary, "platform.dev/platform")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "cluster: build platform:", err)
		return 1
	}
	return m.Run()
}

// missingTools names what the cluster needs and the machine lacks: etcd, PostgreSQL, bash, curl.
func missingTools() string {
	for _, tool := range []string{"etcd", "bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("cluster tests skipped: %s is not on PATH (Debian: etcd-server, bash, curl)", tool)
		}
	}
	if _, err := exec.LookPath("pg_ctl"); err != nil {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
		sort.Strings(matches)
		if len(matches) == 0 {
			return "cluster tests skipped: PostgreSQL's pg_ctl is not on PATH nor under /usr/lib/postgresql/*/bin (Debian: postgresql)"
		}
	}
	return ""
}

func requireTools(t testing.TB) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
}
