package pack

import (
	"archive/zip"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// helloPackDir is the sample Pack source folder that the README walkthrough zips.
var helloPackDir = filepath.Join("..", "..", "config", "samples", "packs", "hello-pack")

// entry is one file of a test archive; mode 0 means a regular 0644 file.
type entry struct {
	name string
	body string
	mode fs.FileMode
}

// zipEntries builds an archive with archive/zip, in the given order.
func zipEntries(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h.SetMode(mode)
		f, err := w.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// dirEntries reads a Pack source folder as archive entries, sorted by path.
func dirEntries(t testing.TB, dir string) []entry {
	t.Helper()
	var out []entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		out = append(out, entry{name: filepath.ToSlash(rel), body: string(b)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// helloEntries is the hello-pack folder as entries, with one file replaced or added.
func helloEntries(t testing.TB, replace ...entry) []entry {
	t.Helper()
	es := dirEntries(t, helloPackDir)
	for _, r := range replace {
		found := false
		for i := range es {
			if es[i].name == r.name {
				es[i] = r
				found = true
			}
		}
		if !found {
			es = append(es, r)
		}
	}
	return es
}
