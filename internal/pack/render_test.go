package pack

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
)

func resourceNamed(t testing.TB, a *Archive, key string) Resource {
	t.Helper()
	for _, r := range a.Resources {
		if Key(r.Kind, r.Name) == key {
			return r
		}
	}
	t.Fatalf("no %s in the archive", key)
	return Resource{}
}

func TestRenderReplacesASelectedBindingWithTheSelection(t *testing.T) {
	g := NewWithT(t)
	a := helloArchive(t)
	u, err := Render(a, resourceNamed(t, a, "Agent/translator"), "ws-1", map[string]BindingSelection{"translation-model": {Namespace: "default", Name: "gpt"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u.Object["definition"]).To(HaveKeyWithValue("modelProfile", map[string]any{"name": "gpt", "namespace": "default"}))
	g.Expect(u.GetNamespace()).To(Equal("ws-1"))
}

func TestRenderLeavesAnUnselectedBindingAbsent(t *testing.T) {
	g := NewWithT(t)
	a := helloArchive(t)
	u, err := Render(a, resourceNamed(t, a, "Agent/translator"), "ws-1", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u.Object["definition"]).NotTo(HaveKey("modelProfile"), "the Agent reports that it has no model")
}

func TestRenderLabelsOwnershipAndAnnotatesVersionAndFingerprint(t *testing.T) {
	g := NewWithT(t)
	a := helloArchive(t)
	r := resourceNamed(t, a, "Agent/greeter")
	u, err := Render(a, r, "ws-1", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u.GetLabels()).To(Equal(map[string]string{"pack": "hello", PackLabel: "samples.hello-pack"}))
	g.Expect(u.GetAnnotations()).To(HaveKeyWithValue(VersionAnnotation, "1.0.0"))
	g.Expect(u.GetAnnotations()).To(HaveKeyWithValue(FingerprintAnnotation, string(Fingerprint(u.Object))))
	g.Expect(r.Object["metadata"]).NotTo(HaveKey("namespace"), "Render does not change the archive's object")
}

func TestRenderAppliesTheSchemaDefaultsTheServerApplies(t *testing.T) {
	g := NewWithT(t)
	a := helloArchive(t)
	u, err := Render(a, resourceNamed(t, a, "Entry/say-hello"), "ws-1", nil)
	g.Expect(err).NotTo(HaveOccurred())
	def := u.Object["definition"].(map[string]any)
	g.Expect(def).To(HaveKey("exposure"), "the Entry's defaulted exposure, as the server stores it")
}

func TestFingerprintIgnoresStatusServerMetadataAndPlatformLabels(t *testing.T) {
	g := NewWithT(t)
	a := helloArchive(t)
	u, _ := Render(a, resourceNamed(t, a, "Agent/greeter"), "ws-1", nil)
	before := Fingerprint(u.Object)
	other := runtime.DeepCopyJSON(u.Object)
	md := other["metadata"].(map[string]any)
	md["resourceVersion"], md["uid"], md["generation"] = "7", "u-2", int64(3)
	md["labels"].(map[string]any)[PackLabel] = "someone.else"
	md["annotations"].(map[string]any)["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
	other["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready"}}}
	g.Expect(Fingerprint(other)).To(Equal(before))
}

func TestFingerprintChangesWithWhatAPersonCanChange(t *testing.T) {
	a := helloArchive(t)
	u, _ := Render(a, resourceNamed(t, a, "Agent/greeter"), "ws-1", nil)
	before := Fingerprint(u.Object)
	for name, edit := range map[string]func(obj map[string]any){
		"definition": func(obj map[string]any) { obj["definition"].(map[string]any)["displayName"] = "Hi" },
		"a label":    func(obj map[string]any) { obj["metadata"].(map[string]any)["labels"].(map[string]any)["team"] = "x" },
		"an annotation": func(obj map[string]any) {
			obj["metadata"].(map[string]any)["annotations"].(map[string]any)["note"] = "x"
		},
	} {
		t.Run(name, func(t *testing.T) {
			obj := runtime.DeepCopyJSON(u.Object)
			edit(obj)
			NewWithT(t).Expect(Fingerprint(obj)).NotTo(Equal(before))
		})
	}
}

func TestFingerprintIsTheSameForTheSameNumberWhateverItsGoType(t *testing.T) {
	g := NewWithT(t)
	a := map[string]any{"definition": map[string]any{"maxCalls": int64(16)}}
	b := map[string]any{"definition": map[string]any{"maxCalls": float64(16)}}
	g.Expect(Fingerprint(a)).To(Equal(Fingerprint(b)))
}
