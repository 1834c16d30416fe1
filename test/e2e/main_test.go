package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/tools/mcptest"
)

var (
	// platformBinary is the `platform` command built once for the whole package.
	platformBinary string
	// kubectlBinary is the kubectl found on PATH; empty when there is none.
	kubectlBinary string
	// kubeCacheDir keeps kubectl's discovery cache away from the user's ~/.kube: a port reused
	// from an earlier run must not serve stale discovery.
	kubeCacheDir string
	// workDir holds the binary, the cache and the shared server's data.
	workDir string
)

func TestMain(m *testing.M) {
	// The STDIO tool provider of the tool tests is this test binary, started by the platform.
	mcptest.ServeStdioIfRequested()
	holdConnectionsIfRequested()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "e2e: skipped in -short mode (builds the binary and starts servers)")
		return 0
	}
	var err error
	workDir, err = os.MkdirTemp("", "platform-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(workDir)

	platformBinary = filepath.Join(workDir, "platform")
	// `go test` puts its own toolchain first on PATH, so this builds with the same Go.
	build := exec.Command("go", "build", "-o", platformBinary, "platform.dev/platform")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build platform:", err)
		return 1
	}
	kubectlBinary, _ = exec.LookPath("kubectl")
	kubeCacheDir = filepath.Join(workDir, "kube-cache")

	// storetest.Run also stops the PostgreSQL server of the tests that run on both stores.
	code := storetest.Run(m)
	stopSharedServer()
	return code
}

// The read-mostly kubectl tests share one server: starting one costs seconds, and each of those
// tests works on objects with names of its own.
var (
	sharedOnce   sync.Once
	sharedServer *server
	sharedErr    error
)

// shared returns the package's shared server, starting it on first use.
func shared(t *testing.T) *server {
	t.Helper()
	requireKubectl(t)
	sharedOnce.Do(func() {
		dataDir := filepath.Join(workDir, "shared")
		sharedServer, sharedErr = startServer(dataDir)
	})
	if sharedErr != nil {
		t.Fatalf("start the shared server: %v", sharedErr)
	}
	return sharedServer
}

func stopSharedServer() {
	if sharedServer == nil {
		return
	}
	if code, _, err := sharedServer.stop(); err != nil || code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: shared server did not stop cleanly (exit code %d, %v)\n%s\n", code, err, sharedServer.output())
	}
}

// requireKubectl skips a test that needs kubectl when there is none on PATH.
func requireKubectl(t *testing.T) {
	t.Helper()
	if kubectlBinary == "" {
		t.Skip("kubectl is not on PATH")
	}
}
