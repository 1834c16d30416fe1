package e2e

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
)

func TestRestartKeepsObjectsAndCredentials(t *testing.T) {
	requireKubectl(t)
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")

	first := mustStartServer(t, dataDir)
	first.mustKubectl(t, "create", "namespace", "kept")
	first.mustKubectl(t, "apply", "-f", samplePath)
	first.mustKubectl(t, "apply", "-f", writeManifest(t, sampleAgent(t, "kept-agent", "kept")))
	objects := [][]string{
		{"namespace", "kept"},
		{"agent", "support-triage", "--namespace", "default"},
		{"agent", "kept-agent", "--namespace", "kept"},
	}
	uids := map[string]string{}
	for _, obj := range objects {
		uids[obj[1]] = first.mustKubectl(t, append([]string{"get", "-o", "jsonpath={.metadata.uid}"}, obj...)...)
		if uids[obj[1]] == "" {
			t.Fatalf("no uid for %v", obj)
		}
	}
	firstKubeconfig, err := os.ReadFile(first.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}

	t.Run("SIGTERM stops the server cleanly within 15s", func(t *testing.T) {
		g := NewWithT(t)
		code, took, err := first.stop()
		g.Expect(err).NotTo(HaveOccurred(), first.output())
		g.Expect(code).To(Equal(0), first.output())
		g.Expect(took).To(BeNumerically("<", stopTimeout))
		g.Expect(first.stdout.String()).To(ContainSubstring("shutting down"))
	})
	if t.Failed() {
		return
	}

	second := mustStartServer(t, dataDir)

	t.Run("every object is still there with the same uid", func(t *testing.T) {
		g := NewWithT(t)
		for _, obj := range objects {
			r := second.kubectl(append([]string{"get", "-o", "jsonpath={.metadata.uid}"}, obj...)...)
			g.Expect(r.ExitCode).To(Equal(0), r.String())
			g.Expect(r.Stdout).To(Equal(uids[obj[1]]), "uid of %v", obj)
		}
		g.Expect(second.mustKubectl(t, "get", "agent", "support-triage", "-o", "jsonpath={.definition.modelProfile.name}")).To(Equal("offline"))
	})

	t.Run("the kubeconfig of the first run is still trusted", func(t *testing.T) {
		g := NewWithT(t)
		// Same file, pointed at the new address: the CA and the admin certificate were kept.
		path := filepath.Join(t.TempDir(), "first.kubeconfig")
		g.Expect(os.WriteFile(path, firstKubeconfig, 0o600)).To(Succeed())
		r := kubectlWith(path, "", "--server", second.URL(), "get", "namespace", "kept", "-o", "name")
		g.Expect(r.ExitCode).To(Equal(0), r.String())
		g.Expect(r.Stdout).To(Equal("namespace/kept\n"))
	})

	t.Run("platform kubeconfig --server renders a working kubeconfig with the same CA", func(t *testing.T) {
		g := NewWithT(t)
		out := platform(kubectlTimeout, "kubeconfig", "--data-dir", dataDir, "--server", second.URL())
		g.Expect(out.ExitCode).To(Equal(0), out.String())
		rendered, err := clientcmd.Load([]byte(out.Stdout))
		g.Expect(err).NotTo(HaveOccurred(), out.String())
		old, err := clientcmd.Load(firstKubeconfig)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rendered.Clusters).To(HaveLen(1))
		for _, cluster := range rendered.Clusters {
			g.Expect(cluster.Server).To(Equal(second.URL()))
			g.Expect(cluster.CertificateAuthorityData).To(Equal(old.Clusters[old.Contexts[old.CurrentContext].Cluster].CertificateAuthorityData))
		}

		path := filepath.Join(t.TempDir(), "rendered.kubeconfig")
		g.Expect(os.WriteFile(path, []byte(out.Stdout), 0o600)).To(Succeed())
		r := kubectlWith(path, "", "get", "agent", "kept-agent", "--namespace", "kept", "-o", "jsonpath={.metadata.uid}")
		g.Expect(r.ExitCode).To(Equal(0), r.String())
		g.Expect(r.Stdout).To(Equal(uids["kept-agent"]))
	})

	t.Run("the data directory's kubeconfig follows the new address", func(t *testing.T) {
		g := NewWithT(t)
		cfg, err := clientcmd.LoadFromFile(second.Kubeconfig())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server).To(Equal(second.URL()))
	})
}
