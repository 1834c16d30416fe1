package pack_test

import (
	"archive/zip"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"platform.dev/platform/apiserver/testenv"
	"platform.dev/platform/internal/pack"
)

// TestRenderedObjectsApplyAndKeepTheirFingerprint applies the rendered hello-pack to the real
// control plane (CRD schema, CEL rules, the platform's admission) as the platform does, and reads
// each object back: the server accepts it as rendered, and the stored object, with its defaults,
// status and server metadata, has the fingerprint Render annotated. Plan relies on this to tell
// an unchanged object from a person's edit. (The binding is satisfied inside the Pack's own
// namespace: an Agent's modelProfile reference has no namespace field yet.)
func TestRenderedObjectsApplyAndKeepTheirFingerprint(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := testenv.Start(ctx, testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer env.Stop()
	const ns = "pack-render"
	_, err = env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	client, err := dynamic.NewForConfig(env.Platform)
	g.Expect(err).NotTo(HaveOccurred())

	a := readHelloPack(t)
	for _, r := range a.Resources {
		u, err := pack.Render(a, r, ns, map[string]pack.BindingSelection{"translation-model": {Namespace: "samples.hello-pack", Name: "hello-offline"}})
		g.Expect(err).NotTo(HaveOccurred())
		gvr := schema.GroupVersionResource{Group: "platform.dev", Version: "v1", Resource: strings.ToLower(string(r.Kind)) + "s"}
		if r.Kind == "Entry" {
			gvr.Resource = "entries"
		}
		body, err := u.MarshalJSON()
		g.Expect(err).NotTo(HaveOccurred())
		_, err = client.Resource(gvr).Namespace(ns).Patch(ctx, r.Name, types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: "pack-test", FieldValidation: metav1.FieldValidationStrict})
		g.Expect(err).NotTo(HaveOccurred(), r.Path)
		got, err := client.Resource(gvr).Namespace(ns).Get(ctx, r.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(pack.Fingerprint(got.Object))).To(Equal(u.GetAnnotations()[pack.FingerprintAnnotation]), "%s as stored: %v", r.Path, got.Object["definition"])
		g.Expect(pack.LiveFrom(got).Fingerprint()).To(Equal(pack.Fingerprint(got.Object)))
	}
}

// readHelloPack zips the sample source folder as `zip -r` would and reads it.
func readHelloPack(t *testing.T) *pack.Archive {
	t.Helper()
	dir := filepath.Join("..", "..", "config", "samples", "packs", "hello-pack")
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := w.Create(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		_, err = f.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	a, err := pack.Read(buf.Bytes(), "hello-pack.zip")
	if err != nil {
		t.Fatal(err)
	}
	return a
}
