package pack

import (
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
