package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// kubectlTimeout bounds one kubectl call; they take well under a second against a local server.
const kubectlTimeout = time.Minute

// samplePath is the Agent sample users are pointed to, relative to this package.
const samplePath = "../../config/samples/platform_v1_agent.yaml"

// kubectl runs kubectl against the server with the kubeconfig `platform serve` wrote.
func (s *server) kubectl(args ...string) runResult {
	return kubectlWith(s.Kubeconfig(), "", args...)
}

// deleteEntriesThen deletes the Entries of namespace, waits until their PublishedEntries are gone
// (the Entry controller removes them), then deletes what the rest of the arguments name: the kube
// API refuses to delete an Agent or a Flow that a PublishedEntry pins. The test fails when a step
// does, since the tests after it on the shared server expect a clean namespace.
func (s *server) deleteEntriesThen(t *testing.T, namespace string, entries []string, others ...string) {
	t.Helper()
	s.mustKubectl(t, append([]string{"delete", "-n", namespace, "entries", "--ignore-not-found"}, entries...)...)
	wait := []string{"wait", "-n", namespace, "--for=delete", "--timeout=30s"}
	for _, entry := range entries {
		wait = append(wait, "publishedentry/"+entry)
	}
	s.mustKubectl(t, wait...)
	s.mustKubectl(t, append([]string{"delete", "-n", namespace, "--ignore-not-found"}, others...)...)
}

// kubectlStdin runs kubectl with stdin, for `-f -`.
func (s *server) kubectlStdin(stdin string, args ...string) runResult {
	return kubectlWith(s.Kubeconfig(), stdin, args...)
}

// mustKubectl runs kubectl, fails the test unless it exits 0, and returns its stdout.
func (s *server) mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	r := s.kubectl(args...)
	if r.ExitCode != 0 {
		select {
		case <-s.exited:
			t.Fatalf("kubectl failed: %s\nbecause the server exited (%v):\n%s", r, s.err, s.output())
		default:
			t.Fatalf("kubectl failed: %s", r)
		}
	}
	return r.Stdout
}

func kubectlWith(kubeconfig, stdin string, args ...string) runResult {
	env := []string{"KUBECONFIG=" + kubeconfig, "KUBECACHEDIR=" + kubeCacheDir}
	return run(kubectlTimeout, stdin, env, kubectlBinary, args...)
}

// sampleAgent is the Agent of config/samples renamed to name, in namespace when not empty.
func sampleAgent(t *testing.T, name, namespace string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		t.Fatalf("%s: %v", samplePath, err)
	}
	obj.SetName(name)
	if namespace != "" {
		obj.SetNamespace(namespace)
	}
	return obj
}

// set changes one field of obj; the test fails on a path that crosses a non-object.
func set(t *testing.T, obj *unstructured.Unstructured, value any, path ...string) {
	t.Helper()
	if err := unstructured.SetNestedField(obj.Object, value, path...); err != nil {
		t.Fatal(err)
	}
}

// writeManifest writes obj as YAML into a file of the test's temporary directory.
func writeManifest(t *testing.T, obj *unstructured.Unstructured) string {
	t.Helper()
	data, err := yaml.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), obj.GetName()+".yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fromYAML decodes kubectl's -o yaml output.
func fromYAML(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(text), &obj.Object); err != nil {
		t.Fatalf("decode kubectl output: %v\n%s", err, text)
	}
	return obj
}
