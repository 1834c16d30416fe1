package pack

import (
	"io/fs"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestTheSampleHelloPackReads(t *testing.T) {
	g := NewWithT(t)
	a, err := Read(zipEntries(t, dirEntries(t, helloPackDir)...), "hello-pack.zip")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Manifest.Metadata.Publisher).To(Equal("samples"))
	g.Expect(a.Manifest.Namespace()).To(Equal("samples.hello-pack"))
	g.Expect(a.Readme).To(ContainSubstring("# Hello Pack"))
	g.Expect(string(a.Digest)).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
	var keys []string
	for _, r := range a.Resources {
		keys = append(keys, Key(r.Kind, r.Name))
	}
	g.Expect(keys).To(Equal([]string{"ModelProvider/hello-offline", "ModelProfile/hello-offline", "Agent/greeter", "Agent/translator", "Flow/greeter", "Entry/say-hello"}))
	g.Expect(a.Resources[3].Bindings).To(Equal([]string{"translation-model"}))
	g.Expect(a.Resources[2].Object["apiVersion"]).To(Equal("platform.dev/v1"))
	g.Expect(a.Resources[2].Object["metadata"]).To(HaveKeyWithValue("labels", map[string]any{"pack": "hello"}))
}

// `zip -r` writes an entry for each folder (`agents/`, mode drwxr-xr-x); those are accepted
// when a listed resource is inside them.
func TestFolderEntriesOfListedResourcesAreAccepted(t *testing.T) {
	g := NewWithT(t)
	es := []entry{{name: "agents/", mode: fs.ModeDir | 0o755}}
	es = append(es, tiny()...)
	a, err := Read(zipEntries(t, es...), "tiny.zip")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Resources).To(HaveLen(1))
}

func TestTheManifestDefaultsAudienceAndPurpose(t *testing.T) {
	g := NewWithT(t)
	a, err := Read(zipEntries(t, tiny()...), "tiny.zip")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Manifest.Metadata.Audience).To(Equal("universal"))
	g.Expect(a.Manifest.Metadata.Purpose).To(Equal("standard"))
	g.Expect(a.Readme).To(BeEmpty(), "the README is optional")
}

func TestAResourceReadsInEitherSpelling(t *testing.T) {
	g := NewWithT(t)
	kube := strings.Replace(strings.Replace(agentA, "platform/v1", "platform.dev/v1", 1), "  name: a\n", "  name: a\n  labels:\n    team: x\n", 1)
	spec := strings.Replace(agentA, "  name: a\n", "  name: a\n  tags:\n    team: x\n", 1)
	for _, m := range []string{kube, spec} {
		a, err := Read(zipEntries(t, oneResource(m)...), "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(a.Resources[0].Object["apiVersion"]).To(Equal("platform.dev/v1"))
		g.Expect(a.Resources[0].Object["metadata"]).To(Equal(map[string]any{"name": "a", "labels": map[string]any{"team": "x"}}))
	}
}

func TestReferencesAreListedForPlanning(t *testing.T) {
	g := NewWithT(t)
	a := helloArchive(t)
	g.Expect(resourceNamed(t, a, "Flow/greeter").References).To(Equal([]Reference{{Kind: "Agent", Name: "greeter", Field: "definition.target.id"}}))
	g.Expect(resourceNamed(t, a, "Entry/say-hello").References).To(Equal([]Reference{{Kind: "Flow", Name: "greeter", Field: "definition.binding.flow.name"}}))
	g.Expect(resourceNamed(t, a, "Agent/translator").References).To(BeEmpty(), "a binding is not a reference by name")
}
