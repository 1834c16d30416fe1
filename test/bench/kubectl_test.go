package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"platform.dev/platform/apiserver/testenv"
)

// applyManifests is how many Agent manifests the kubectl benchmark applies in one op.
const applyManifests = 1000

// BenchmarkKubectlApply1000 measures `kubectl apply -f DIR` of a directory of 1,000 small Agent
// manifests with the kubectl on PATH, client-side (GET and create per object) and with
// --server-side (one apply patch per object). Every op applies into a fresh namespace, so it
// creates 1,000 objects. Discovery is cached before the first op, as for a user who has run
// kubectl against the server before.
func BenchmarkKubectlApply1000(b *testing.B) {
	skipOnExistingCluster(b)
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		b.Skip("kubectl is not on PATH")
	}
	env := startEnv(b)
	dir := filepath.Join(b.TempDir(), "agents")
	if err := writeAgentManifests(dir, applyManifests); err != nil {
		b.Fatal(err)
	}
	run := kubectlRunner{path: kubectl, kubeconfig: env.Kubeconfig, cacheDir: b.TempDir()}
	if _, err := run.output("api-resources", "--api-group=platform.dev"); err != nil {
		b.Fatalf("warm up kubectl's discovery cache: %v", err)
	}

	for _, mode := range []struct {
		name  string
		flags []string
	}{
		{"client-side", nil},
		{"server-side", []string{"--server-side"}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			// Which kubectl ran matters to the result (version also warns about an unsupported
			// skew). Logged here: a parent benchmark's log is only printed with -v.
			logKubectlVersion.Do(func() {
				out, err := run.combinedOutput("version")
				if err != nil {
					b.Logf("kubectl version: %v", err)
				}
				b.Logf("%s version: %s", kubectl, bytes.TrimSpace(out))
			})
			var applying time.Duration
			for range b.N {
				b.StopTimer()
				namespace := createNamespace(b, env)
				args := append([]string{"apply", "-f", dir, "--namespace", namespace}, mode.flags...)
				b.StartTimer()

				t0 := time.Now()
				_, err := run.output(args...)
				applying += time.Since(t0)

				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				checkAgentCount(b, env, namespace, applyManifests)
				b.StartTimer()
			}
			perApply := applying.Seconds() / float64(b.N)
			b.ReportMetric(perApply, "s/apply")
			b.ReportMetric(applyManifests/perApply, "manifests/s")
		})
	}
}

func writeAgentManifests(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := range n {
		name := fmt.Sprintf("agent-%04d", i)
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), agentManifest(name), 0o644); err != nil {
			return err
		}
	}
	return nil
}

var logKubectlVersion sync.Once

type kubectlRunner struct {
	path, kubeconfig, cacheDir string
}

func (r kubectlRunner) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, r.path, append([]string{"--cache-dir", r.cacheDir}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+r.kubeconfig)
	return cmd
}

// output runs kubectl against the benchmark's server with a private discovery cache.
func (r kubectlRunner) output(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := r.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubectl %v: %w\n%s", args, err, lastBytes(stderr.Bytes(), 4096))
	}
	return stdout.Bytes(), nil
}

func (r kubectlRunner) combinedOutput(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return r.command(ctx, args...).CombinedOutput()
}

func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func createNamespace(b *testing.B, env *testenv.Env) string {
	b.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("bench")}}
	if _, err := env.Kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		b.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

func checkAgentCount(b *testing.B, env *testenv.Env, namespace string, want int) {
	b.Helper()
	list, err := env.Dynamic.Resource(agents).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatalf("list agents in %s: %v", namespace, err)
	}
	if len(list.Items) != want {
		b.Fatalf("%d agents in %s after apply, want %d", len(list.Items), namespace, want)
	}
}
