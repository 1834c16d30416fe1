package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestClientSideApplyReportsCreatedUnchangedConfigured(t *testing.T) {
	s := shared(t)
	g := NewWithT(t)
	t.Cleanup(func() { s.kubectl("delete", "-f", samplePath, "--ignore-not-found", "--wait=false") })

	r := s.kubectl("apply", "-f", samplePath)
	g.Expect(r.ExitCode).To(Equal(0), r.String())
	g.Expect(r.Stdout).To(Equal("agent.platform.dev/support-triage created\n"), r.String())

	r = s.kubectl("apply", "-f", samplePath)
	g.Expect(r.ExitCode).To(Equal(0), r.String())
	g.Expect(r.Stdout).To(Equal("agent.platform.dev/support-triage unchanged\n"), r.String())

	edited := sampleAgent(t, "support-triage", "")
	set(t, edited, "Support triage (edited)", "definition", "displayName")
	r = s.kubectl("apply", "-f", writeManifest(t, edited))
	g.Expect(r.ExitCode).To(Equal(0), r.String())
	g.Expect(r.Stdout).To(Equal("agent.platform.dev/support-triage configured\n"), r.String())

	g.Expect(s.mustKubectl(t, "get", "agent", "support-triage", "-o", "jsonpath={.definition.displayName}")).
		To(Equal("Support triage (edited)"))
}

func TestServerSideApplyRecordsKubectlAsFieldManager(t *testing.T) {
	s := shared(t)
	g := NewWithT(t)
	const name = "server-side-applied"
	agent := sampleAgent(t, name, "")
	manifest := writeManifest(t, agent)
	t.Cleanup(func() { s.kubectl("delete", "-f", manifest, "--ignore-not-found", "--wait=false") })

	r := s.kubectl("apply", "--server-side", "-f", manifest)
	g.Expect(r.ExitCode).To(Equal(0), r.String())
	g.Expect(r.Stdout).To(Equal("agent.platform.dev/" + name + " serverside-applied\n"))

	live := fromYAML(t, s.mustKubectl(t, "get", "agent", name, "-o", "yaml", "--show-managed-fields"))
	managed, _, _ := unstructured.NestedSlice(live.Object, "metadata", "managedFields")
	var kubectlFields map[string]any
	for _, entry := range managed {
		e := entry.(map[string]any)
		if e["manager"] == "kubectl" && e["operation"] == "Apply" {
			kubectlFields, _, _ = unstructured.NestedMap(e, "fieldsV1")
		}
	}
	g.Expect(kubectlFields).NotTo(BeNil(), "no Apply entry of manager kubectl in %v", managed)
	for _, path := range [][]string{
		{"f:definition", "f:displayName"},
		{"f:definition", "f:instructions"},
		{"f:definition", "f:modelProfile", "f:name"},
		{"f:definition", "f:tools", `k:{"name":"search-knowledge-base"}`, "f:name"},
		{"f:metadata", "f:labels", "f:team"},
	} {
		_, found, _ := unstructured.NestedFieldNoCopy(kubectlFields, path...)
		g.Expect(found).To(BeTrue(), "managed field %v in %v", path, kubectlFields)
	}

	// Another manager changing a field kubectl owns is a conflict, not a silent overwrite.
	other := sampleAgent(t, name, "")
	set(t, other, "Taken over", "definition", "displayName")
	r = s.kubectl("apply", "--server-side", "--field-manager=someone-else", "-f", writeManifest(t, other))
	g.Expect(r.ExitCode).NotTo(Equal(0), r.String())
	g.Expect(r.Stderr).To(ContainSubstring("conflict"), r.String())
	g.Expect(r.Stderr).To(ContainSubstring(".definition.displayName"), r.String())

	// The owner itself may change it.
	set(t, agent, "Applied twice", "definition", "displayName")
	r = s.kubectl("apply", "--server-side", "-f", writeManifest(t, agent))
	g.Expect(r.ExitCode).To(Equal(0), r.String())
	g.Expect(s.mustKubectl(t, "get", "agent", name, "-o", "jsonpath={.definition.displayName}")).To(Equal("Applied twice"))
}

func TestDiffExitsZeroWhenLiveMatchesAndOneWithTheChange(t *testing.T) {
	if _, err := exec.LookPath("diff"); err != nil {
		t.Skip("kubectl diff needs a diff program on PATH")
	}
	s := shared(t)
	g := NewWithT(t)
	const name = "diffed"
	agent := sampleAgent(t, name, "")
	manifest := writeManifest(t, agent)
	t.Cleanup(func() { s.kubectl("delete", "-f", manifest, "--ignore-not-found", "--wait=false") })
	s.mustKubectl(t, "apply", "-f", manifest)

	r := s.kubectl("diff", "-f", manifest)
	g.Expect(r.ExitCode).To(Equal(0), r.String())
	g.Expect(r.Stdout).To(BeEmpty(), r.String())

	set(t, agent, "Support triage (changed)", "definition", "displayName")
	r = s.kubectl("diff", "-f", writeManifest(t, agent))
	g.Expect(r.ExitCode).To(Equal(1), r.String())
	g.Expect(r.Stdout).To(MatchRegexp(`(?m)^-\s+displayName: Support triage$`), r.String())
	g.Expect(r.Stdout).To(MatchRegexp(`(?m)^\+\s+displayName: Support triage \(changed\)$`), r.String())

	// diff shows, it does not change.
	g.Expect(s.mustKubectl(t, "get", "agent", name, "-o", "jsonpath={.definition.displayName}")).To(Equal("Support triage"))
}

func TestDeleteRemovesTheAgent(t *testing.T) {
	s := shared(t)
	g := NewWithT(t)
	const name = "deleted"
	manifest := writeManifest(t, sampleAgent(t, name, ""))
	s.mustKubectl(t, "apply", "-f", manifest)

	r := s.kubectl("delete", "-f", manifest)
	g.Expect(r.ExitCode).To(Equal(0), r.String())
	// kubectl 1.33 and later add "from <namespace> namespace".
	g.Expect(r.Stdout).To(HavePrefix(`agent.platform.dev "`+name+`" deleted`), r.String())

	r = s.kubectl("get", "agent", name)
	g.Expect(r.ExitCode).To(Equal(1), r.String())
	g.Expect(r.Stderr).To(ContainSubstring(`(NotFound)`), r.String())
	g.Expect(r.Stderr).To(ContainSubstring(`agents.platform.dev "`+name+`" not found`), r.String())
}

// `platform apply` of a manifest with a field of the wrong type names the field and applies
// nothing, and the server logs no unhandled error for it.
func TestPlatformApplyReportsAFieldOfTheWrongTypeWithoutAServerError(t *testing.T) {
	s := shared(t)
	g := NewWithT(t)
	manifest := filepath.Join(t.TempDir(), "agent.yaml")
	g.Expect(os.WriteFile(manifest, []byte("apiVersion: platform/v1\nkind: Agent\nmetadata:\n  name: typed-wrong\ndefinition:\n  instructions: 12\n"), 0o600)).To(Succeed())
	out, err := exec.Command(platformBinary, "apply", "-f", manifest, "-n", "default", "--data-dir", s.DataDir).CombinedOutput()
	g.Expect(err).To(HaveOccurred())
	g.Expect(string(out)).To(ContainSubstring("definition.instructions"))
	g.Expect(string(out)).To(ContainSubstring("nothing from"))
	g.Expect(s.stderr.String()).NotTo(ContainSubstring("Unhandled Error"))
}
