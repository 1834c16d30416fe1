package pack

import (
	"archive/zip"
	"bytes"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func helloArchive(t testing.TB) *Archive {
	t.Helper()
	a, err := Read(zipEntries(t, dirEntries(t, helloPackDir)...), "hello-pack.zip")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func filesOf(a *Archive) []File {
	var fs []File
	for _, r := range a.Resources {
		fs = append(fs, File{Path: r.Path, Object: r.Object})
	}
	return fs
}

func TestWriteIsDeterministicAndReadsBackToTheSameResources(t *testing.T) {
	g := NewWithT(t)
	a := helloArchive(t)
	files := filesOf(a)
	first, err := Write(a.Manifest, a.Readme, files)
	g.Expect(err).NotTo(HaveOccurred())

	// The same input in another order, written again later: byte-identical.
	reversed := make([]File, len(files))
	for i, f := range files {
		reversed[len(files)-1-i] = f
	}
	second, err := Write(a.Manifest, a.Readme, reversed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bytes.Equal(first, second)).To(BeTrue(), "same input, same bytes")

	back, err := Read(first, "written.zip")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.Manifest.Metadata).To(Equal(a.Manifest.Metadata))
	g.Expect(back.Manifest.Definition.Bindings).To(Equal(a.Manifest.Definition.Bindings))
	g.Expect(back.Manifest.Definition.Resources).To(ConsistOf(a.Manifest.Definition.Resources), "listed in path order")
	g.Expect(back.Readme).To(Equal(a.Readme))
	g.Expect(back.Resources).To(HaveLen(len(a.Resources)))
	for i := range a.Resources {
		g.Expect(back.Resources[i].Path).To(Equal(a.Resources[i].Path))
		g.Expect(back.Resources[i].Object).To(Equal(a.Resources[i].Object), a.Resources[i].Path)
		g.Expect(back.Resources[i].Bindings).To(Equal(a.Resources[i].Bindings))
	}
}

func TestWriteSortsEntriesWithAFixedTimeAndMode(t *testing.T) {
	g := NewWithT(t)
	a := helloArchive(t)
	out, err := Write(a.Manifest, a.Readme, filesOf(a))
	g.Expect(err).NotTo(HaveOccurred())
	zr, err := zip.NewReader(bytes.NewReader(out), int64(len(out)))
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		g.Expect(f.Modified.UTC()).To(Equal(time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)), f.Name)
		g.Expect(f.Mode().Perm().String()).To(Equal("-rw-r--r--"), f.Name)
		g.Expect(f.Mode().IsRegular()).To(BeTrue(), f.Name)
	}
	g.Expect(names).To(Equal([]string{"README.md", "agents/greeter.yaml", "agents/translator.yaml", "entries/say-hello.yaml", "flows/greeter.yaml",
		"model-profiles/hello-offline.yaml", "model-providers/hello-offline.yaml", "pack.yaml"}))
}

func TestWriteRendersTheSpecSpellingWithSortedKeys(t *testing.T) {
	g := NewWithT(t)
	a := helloArchive(t)
	out, err := Write(a.Manifest, "", filesOf(a))
	g.Expect(err).NotTo(HaveOccurred())
	zr, _ := zip.NewReader(bytes.NewReader(out), int64(len(out)))
	body := map[string]string{}
	for _, f := range zr.File {
		rc, _ := f.Open()
		var b bytes.Buffer
		b.ReadFrom(rc)
		body[f.Name] = b.String()
	}
	g.Expect(body).NotTo(HaveKey("README.md"), "no README when none is given")
	g.Expect(body["agents/greeter.yaml"]).To(Equal(`apiVersion: platform/v1
definition:
  description: Greets people by name
  displayName: Greeter
  handler: chat
  instructions: |
    Greet the person warmly by name and ask how you can help.
  modelProfile:
    name: hello-offline
kind: Agent
metadata:
  name: greeter
  tags:
    pack: hello
`))
	g.Expect(body["pack.yaml"]).To(HavePrefix("apiVersion: platform/v1\ndefinition:\n  bindings:\n"))
}

func TestWriteKeepsOnlyWhatAPackCarriesOfALiveObject(t *testing.T) {
	g := NewWithT(t)
	a := helloArchive(t)
	live, err := Render(a, a.Resources[2], "ws-1", nil)
	g.Expect(err).NotTo(HaveOccurred())
	live.SetResourceVersion("42")
	live.SetUID("u-1")
	live.Object["status"] = map[string]any{"phase": "Ready"}
	out, err := Write(a.Manifest, "", []File{{Path: "agents/greeter.yaml", Object: live.Object}})
	g.Expect(err).NotTo(HaveOccurred(), "namespace, server metadata, status and platform labels are not exported")
	back, err := Read(out, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.Resources[0].Object["metadata"]).To(Equal(map[string]any{"name": "greeter", "labels": map[string]any{"pack": "hello"}}))
}

func TestWriteRefusesWhatReadWouldRefuse(t *testing.T) {
	g := NewWithT(t)
	a := helloArchive(t)
	_, err := Write(a.Manifest, "", []File{{Path: "../x.yaml", Object: a.Resources[0].Object}})
	g.Expect(err).To(MatchError(ContainSubstring(string(ReasonParentTraversal))))
	_, err = Write(a.Manifest, "", []File{{Path: "agents/translator.yaml", Object: a.Resources[3].Object}})
	g.Expect(err).NotTo(HaveOccurred())
	m := a.Manifest
	m.Definition.Bindings = nil
	_, err = Write(m, "", []File{{Path: "agents/translator.yaml", Object: a.Resources[3].Object}})
	g.Expect(err).To(MatchError(ContainSubstring(string(ReasonUnknownBinding))))
}
