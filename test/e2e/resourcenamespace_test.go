package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	"platform.dev/platform/internal/resourcenamespace"
)

// TestAPacksNamespaceBelongsToItsWorkspaceForTokensAndNamespaceLists: a Pack's resource
// namespace, created by resourcenamespace.Ensure (what installing a Pack calls), is readable with a
// PAT of its workspace and not with one of another workspace; `kubectl get ns` lists a caller's
// workspaces with their resource namespaces only; no caller creates or deletes namespaces; and
// deleting the workspace's namespace deletes its resource namespaces.
func TestAPacksNamespaceBelongsToItsWorkspaceForTokensAndNamespaceLists(t *testing.T) {
	requireKubectl(t)
	s := mustStartServer(t, t.TempDir())
	base := s.ServiceURL(t)
	admin := bootstrapAlphaAndBeta(t, base)
	admin.must(http.StatusCreated, http.MethodPost, "/api/identity/accounts/", "", map[string]any{
		"username": "viewer", "password": e2ePassword, "workspace": "alpha", "role": "Viewer"})

	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	kube, err := client.New(cfg, client.Options{Scheme: platformscheme.Scheme, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	packs := map[string]string{}
	for _, workspace := range []string{"alpha", "beta"} {
		name, err := resourcenamespace.Ensure(context.Background(), kube, workspace, "contoso.reports")
		if err != nil {
			t.Fatal(err)
		}
		packs[workspace] = name
		s.mustKubectl(t, "apply", "-f", writeManifest(t, sampleAgent(t, "pack-agent", name)))
	}
	if packs["alpha"] == packs["beta"] {
		t.Fatalf("two workspaces share the pack namespace %s", packs["alpha"])
	}

	viewer, _ := personalAccessToken(t, s, base, "viewer", "alpha")
	adminBeta, _ := personalAccessToken(t, s, base, "admin", "beta")

	expectKubectl(t, viewer, true, "pack-agent", "get", "agents", "-n", packs["alpha"])
	expectKubectl(t, viewer, false, "forbidden", "get", "agents", "-n", packs["beta"])
	expectKubectl(t, viewer, false, "forbidden", "delete", "agent", "pack-agent", "-n", packs["alpha"])
	expectKubectl(t, viewer, true, packs["alpha"], "get", "ns", packs["alpha"])
	expectKubectl(t, viewer, false, "forbidden", "get", "ns", packs["beta"])
	if r := kubectlWith(viewer, "", "get", "ns", "-o", "name"); strings.Join(strings.Fields(r.Stdout), " ") != "namespace/alpha namespace/"+packs["alpha"] {
		t.Errorf("a Viewer of alpha lists namespaces %q, want alpha and its pack namespace: %s", r.Stdout, r)
	}

	// A Platform administrator's PAT for beta writes in beta's pack namespace, and nowhere else.
	expectKubectl(t, adminBeta, true, "created", "apply", "-f", writeManifest(t, sampleAgent(t, "another", packs["beta"])))
	expectKubectl(t, adminBeta, false, "forbidden", "apply", "-f", writeManifest(t, sampleAgent(t, "another", packs["alpha"])))
	if r := kubectlWith(adminBeta, "", "get", "ns", "-o", "name"); strings.Join(strings.Fields(r.Stdout), " ") != "namespace/beta namespace/"+packs["beta"] {
		t.Errorf("a PAT for beta lists namespaces %q, want beta and its pack namespace: %s", r.Stdout, r)
	}
	// Namespaces are created and deleted by the platform, never through a token.
	expectKubectl(t, adminBeta, false, "forbidden", "delete", "ns", packs["beta"])
	expectKubectl(t, adminBeta, false, "forbidden", "create", "ns", "beta-extra")

	s.mustKubectl(t, "delete", "ns", "alpha", "--wait=false")
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := s.kubectl("get", "ns", packs["alpha"], "-o", "jsonpath={.status.phase}")
		if r.ExitCode != 0 && strings.Contains(r.Stderr, "NotFound") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pack namespace of a deleted workspace remains: %s", r)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := s.mustKubectl(t, "get", "ns", packs["beta"], "-o", "jsonpath={.status.phase}"); got != "Active" {
		t.Errorf("another workspace's pack namespace is %q", got)
	}
}
