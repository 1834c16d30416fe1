package pack

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"runtime"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// The smallest valid Pack: one Agent.
const agentA = `apiVersion: platform/v1
kind: Agent
metadata:
  name: a
definition:
  displayName: A
`

func packYAML(resources ...string) string {
	s := "apiVersion: platform/v1\nkind: Pack\nmetadata:\n  publisher: acme\n  name: tiny\n  version: 1.0.0\ndefinition:\n  resources:\n"
	for _, r := range resources {
		s += "  - " + r + "\n"
	}
	return s
}

// withBindings adds bindings to a pack.yaml from packYAML.
func withBindings(pack, bindings string) string {
	return strings.Replace(pack, "definition:\n", "definition:\n  bindings:\n"+bindings, 1)
}

// tiny is a valid archive of pack.yaml and agents/a.yaml, with extra entries after them.
func tiny(extra ...entry) []entry {
	return append([]entry{{name: "pack.yaml", body: packYAML("agents/a.yaml")}, {name: "agents/a.yaml", body: agentA}}, extra...)
}

// oneResource is a valid pack.yaml listing resources/r.yaml with the given manifest.
func oneResource(manifest string) []entry {
	return []entry{{name: "pack.yaml", body: packYAML("resources/r.yaml")}, {name: "resources/r.yaml", body: manifest}}
}

// rawEntry is written with CreateRaw: the header says what the test wants, whatever the data.
type rawEntry struct {
	header zip.FileHeader
	data   []byte
}

func zipRaw(t testing.TB, entries []entry, raws ...rawEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, e := range entries {
		f, err := w.Create(e.name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(e.body))
	}
	for _, r := range raws {
		h := r.header
		f, err := w.CreateRaw(&h)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(r.data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

var (
	bombOnce sync.Once
	bomb     []byte
)

// bombData is 256 MiB of zeros, deflated (about 256 KiB): a ratio of 1000 to 1.
func bombData(t testing.TB) []byte {
	bombOnce.Do(func() {
		var buf bytes.Buffer
		w, _ := flate.NewWriter(&buf, flate.BestCompression)
		io.Copy(w, io.LimitReader(zeros{}, 256<<20))
		w.Close()
		bomb = buf.Bytes()
	})
	return bomb
}

func deflated(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.DefaultCompression)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// rawFile is a deflated entry whose header declares size and crc as given.
func rawFile(name string, content []byte, declared uint64, crc uint32) rawEntry {
	d := deflated(content)
	return rawEntry{header: zip.FileHeader{Name: name, Method: zip.Deflate, CRC32: crc, CompressedSize64: uint64(len(d)), UncompressedSize64: declared}, data: d}
}

// withExternalAttrs rewrites the central-directory record of the named entry: creator Unix and
// the given Unix mode in the external attributes (what `zip --symlinks` writes for a link).
func withExternalAttrs(t testing.TB, data []byte, name string, unixMode uint32) []byte {
	t.Helper()
	out := bytes.Clone(data)
	sig := []byte{'P', 'K', 1, 2}
	for i := 0; i+46 <= len(out); i++ {
		if !bytes.Equal(out[i:i+4], sig) {
			continue
		}
		nameLen := int(out[i+28]) | int(out[i+29])<<8
		if string(out[i+46:i+46+nameLen]) != name {
			continue
		}
		out[i+5] = 3 // version made by: Unix
		attrs := unixMode << 16
		out[i+38], out[i+39], out[i+40], out[i+41] = byte(attrs), byte(attrs>>8), byte(attrs>>16), byte(attrs>>24)
		return out
	}
	t.Fatalf("no central directory record for %s", name)
	return nil
}

// withFlags sets general-purpose flags of the named entry in its local and central headers.
func withFlags(t testing.TB, data []byte, name string, flags uint16) []byte {
	t.Helper()
	out := bytes.Clone(data)
	found := false
	for i := 0; i+30 <= len(out); i++ {
		switch {
		case bytes.Equal(out[i:i+4], []byte{'P', 'K', 3, 4}):
			nameLen := int(out[i+26]) | int(out[i+27])<<8
			if i+30+nameLen <= len(out) && string(out[i+30:i+30+nameLen]) == name {
				out[i+6] |= byte(flags)
				found = true
			}
		case bytes.Equal(out[i:i+4], []byte{'P', 'K', 1, 2}) && i+46 <= len(out):
			nameLen := int(out[i+28]) | int(out[i+29])<<8
			if i+46+nameLen <= len(out) && string(out[i+46:i+46+nameLen]) == name {
				out[i+8] |= byte(flags)
			}
		}
	}
	if !found {
		t.Fatalf("no local header for %s", name)
	}
	return out
}

// TestEveryRefusalNamesItsReason is the corpus of refused archives: each rule of the format, the
// shapes of three Helm CVEs (CVE-2024-25620: a name or listed path that writes outside the
// target; CVE-2025-53547: a symbolic link that leads the writer outside; CVE-2026-35206: entry
// names that escape through links or encoded traversal) and zip bombs.
func TestEveryRefusalNamesItsReason(t *testing.T) {
	bigAgent := func(n int) entry {
		return entry{name: "agents/a.yaml", body: agentA + "# " + strings.Repeat("x", n) + "\n"}
	}
	fourMiB := bytes.Repeat([]byte{'#'}, MaxFileExpandedBytes)
	cases := map[string]struct {
		archive func(t *testing.T) []byte
		reason  Reason
		path    string
		field   string
	}{
		"not a ZIP":       {archive: func(*testing.T) []byte { return []byte("hello, I am a text file") }, reason: ReasonNotZip},
		"an empty upload": {archive: func(*testing.T) []byte { return nil }, reason: ReasonNotZip},
		"a truncated ZIP": {archive: func(t *testing.T) []byte { b := zipEntries(t, tiny()...); return b[:len(b)-30] }, reason: ReasonNotZip},
		"over 8 MiB":      {archive: func(*testing.T) []byte { return make([]byte, MaxCompressedBytes+1) }, reason: ReasonTooLarge},
		"more than 128 files": {archive: func(t *testing.T) []byte {
			es := tiny()
			for i := range MaxFiles {
				es = append(es, entry{name: "x/" + strings.Repeat("f", 1+i%5) + string(rune('a'+i%26)) + string(rune('a'+i/26)), body: "x"})
			}
			return zipEntries(t, es...)
		}, reason: ReasonTooManyFiles},
		"an absolute path":                {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "/etc/passwd", body: "x"})...) }, reason: ReasonAbsolutePath, path: "/etc/passwd"},
		"a parent traversal":              {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "../x", body: "x"})...) }, reason: ReasonParentTraversal, path: "../x"},
		"CVE-2026-35206: a/../../x":       {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "a/../../x", body: "x"})...) }, reason: ReasonParentTraversal},
		"a traversal ending in ..":        {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "agents/..", body: "x"})...) }, reason: ReasonParentTraversal},
		"CVE-2026-35206: %2e%2e/x":        {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "%2e%2e/x", body: "x"})...) }, reason: ReasonParentTraversal},
		"CVE-2026-35206: %2E%2E%2Fetc":    {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "%2E%2E%2Fetc", body: "x"})...) }, reason: ReasonParentTraversal},
		"an encoded slash hides a folder": {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "agents%2fb.yaml", body: "x"})...) }, reason: ReasonParentTraversal},
		"a backslash":                     {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "agents\\b.yaml", body: "x"})...) }, reason: ReasonBackslash},
		"a Windows traversal":             {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "..\\..\\x", body: "x"})...) }, reason: ReasonBackslash},
		"a drive letter":                  {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "C:/x", body: "x"})...) }, reason: ReasonDriveLetter},
		"a drive-relative name":           {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "c:x", body: "x"})...) }, reason: ReasonDriveLetter},
		"a control character in a name":   {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "a\x01b", body: "x"})...) }, reason: ReasonInvalidPath},
		"an empty segment":                {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "agents//b.yaml", body: "x"})...) }, reason: ReasonInvalidPath},
		"a dot segment":                   {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "./pack.yaml", body: "x"})...) }, reason: ReasonInvalidPath},
		"invalid UTF-8 in a name":         {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "a\xffb", body: "x"})...) }, reason: ReasonInvalidPath},
		"a duplicate path":                {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "agents/a.yaml", body: agentA})...) }, reason: ReasonDuplicatePath, path: "agents/a.yaml"},
		"a case-colliding path":           {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "Agents/A.yaml", body: agentA})...) }, reason: ReasonCaseCollision, path: "Agents/A.yaml"},
		"a case-colliding manifest":       {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "PACK.YAML", body: "x"})...) }, reason: ReasonCaseCollision},
		"a file that is also a folder":    {archive: func(t *testing.T) []byte { return zipEntries(t, tiny(entry{name: "agents", body: "x"})...) }, reason: ReasonDuplicatePath},
		"CVE-2025-53547: a symbolic link": {archive: func(t *testing.T) []byte {
			return zipEntries(t, tiny(entry{name: "agents/b.yaml", body: "../../../../home/user/.bashrc", mode: fs.ModeSymlink | 0o777})...)
		}, reason: ReasonLink, path: "agents/b.yaml"},
		"CVE-2025-53547: a linked folder then a file through it": {archive: func(t *testing.T) []byte {
			return zipEntries(t, tiny(entry{name: "out", body: "/tmp", mode: fs.ModeSymlink | 0o777}, entry{name: "out/x.yaml", body: "x"})...)
		}, reason: ReasonLink, path: "out"},
		"CVE-2026-35206: a listed resource that is a link": {archive: func(t *testing.T) []byte {
			return withExternalAttrs(t, zipEntries(t, tiny()...), "agents/a.yaml", 0o120777)
		}, reason: ReasonLink, path: "agents/a.yaml"},
		"a link made on macOS": {archive: func(t *testing.T) []byte {
			b := withExternalAttrs(t, zipEntries(t, tiny()...), "agents/a.yaml", 0o120755)
			i := bytes.Index(b, []byte{'P', 'K', 1, 2})
			b[i+5] = 19
			return b
		}, reason: ReasonLink},
		"a named pipe": {archive: func(t *testing.T) []byte {
			return zipEntries(t, tiny(entry{name: "p", mode: fs.ModeNamedPipe | 0o644})...)
		}, reason: ReasonNotRegular},
		"a device": {archive: func(t *testing.T) []byte {
			return zipEntries(t, tiny(entry{name: "d", mode: fs.ModeDevice | 0o644})...)
		}, reason: ReasonNotRegular},
		"a socket in the attributes": {archive: func(t *testing.T) []byte {
			return withExternalAttrs(t, zipEntries(t, tiny()...), "agents/a.yaml", 0o140644)
		}, reason: ReasonNotRegular},
		"a folder entry with content": {archive: func(t *testing.T) []byte {
			return withExternalAttrs(t, zipEntries(t, tiny()...), "agents/a.yaml", 0o040755)
		}, reason: ReasonNotRegular},
		"an unknown Unix file type": {archive: func(t *testing.T) []byte {
			return withExternalAttrs(t, zipEntries(t, tiny()...), "agents/a.yaml", 0o170644)
		}, reason: ReasonNotRegular},
		"an encrypted entry": {archive: func(t *testing.T) []byte { return withFlags(t, zipEntries(t, tiny()...), "agents/a.yaml", 0x1) }, reason: ReasonUnsupportedEntry},
		"an unknown compression method": {archive: func(t *testing.T) []byte {
			return zipRaw(t, []entry{{name: "pack.yaml", body: packYAML("agents/a.yaml")}}, rawEntry{header: zip.FileHeader{Name: "agents/a.yaml", Method: 14, CompressedSize64: 3, UncompressedSize64: 3}, data: []byte("abc")})
		}, reason: ReasonUnsupportedEntry},
		"a zip bomb that declares its size": {archive: func(t *testing.T) []byte {
			d := bombData(t)
			return zipRaw(t, tiny(), rawEntry{header: zip.FileHeader{Name: "bomb", Method: zip.Deflate, CompressedSize64: uint64(len(d)), UncompressedSize64: 256 << 20}, data: d})
		}, reason: ReasonFileTooLarge, path: "bomb"},
		"a zip bomb whose header lies about its size": {archive: func(t *testing.T) []byte {
			d := bombData(t)
			return zipRaw(t, tiny(), rawEntry{header: zip.FileHeader{Name: "bomb", Method: zip.Deflate, CompressedSize64: uint64(len(d)), UncompressedSize64: 100}, data: d})
		}, reason: ReasonFileTooLarge, path: "bomb"},
		"a zip bomb that declares nothing": {archive: func(t *testing.T) []byte {
			d := bombData(t)
			return zipRaw(t, tiny(), rawEntry{header: zip.FileHeader{Name: "bomb", Method: zip.Deflate, CompressedSize64: uint64(len(d))}, data: d})
		}, reason: ReasonFileTooLarge, path: "bomb"},
		"one byte past the per-file limit": {archive: func(t *testing.T) []byte {
			return zipRaw(t, tiny(), rawFile("big", append(bytes.Clone(fourMiB), '#'), MaxFileExpandedBytes, 0))
		}, reason: ReasonFileTooLarge, path: "big"},
		"files within the per-file limit that expand past 16 MiB in all": {archive: func(t *testing.T) []byte {
			es := tiny()
			for _, n := range []string{"b1", "b2", "b3", "b4", "b5"} {
				es = append(es, entry{name: n, body: string(fourMiB)})
			}
			return zipEntries(t, es...)
		}, reason: ReasonExpandedTooLarge},
		"an entry that expands past its declared size": {archive: func(t *testing.T) []byte {
			content := []byte(agentA)
			return zipRaw(t, []entry{{name: "pack.yaml", body: packYAML("agents/a.yaml")}}, rawFile("agents/a.yaml", content, 10, crc32.ChecksumIEEE(content)))
		}, reason: ReasonCorrupt, path: "agents/a.yaml"},
		"a bad checksum": {archive: func(t *testing.T) []byte {
			content := []byte(agentA)
			return zipRaw(t, []entry{{name: "pack.yaml", body: packYAML("agents/a.yaml")}}, rawFile("agents/a.yaml", content, uint64(len(content)), 12345))
		}, reason: ReasonCorrupt},
		"corrupt deflate data": {archive: func(t *testing.T) []byte {
			return zipRaw(t, []entry{{name: "pack.yaml", body: packYAML("agents/a.yaml")}}, rawEntry{header: zip.FileHeader{Name: "agents/a.yaml", Method: zip.Deflate, CompressedSize64: 4, UncompressedSize64: 4}, data: []byte{0xff, 0xff, 0xff, 0xff}})
		}, reason: ReasonCorrupt},

		"no pack.yaml": {archive: func(t *testing.T) []byte { return zipEntries(t, entry{name: "agents/a.yaml", body: agentA}) }, reason: ReasonMissingManifest},
		"pack.yaml only in a folder": {archive: func(t *testing.T) []byte {
			return zipEntries(t, entry{name: "tiny/pack.yaml", body: packYAML("agents/a.yaml")})
		}, reason: ReasonMissingManifest},
		"pack.yaml is not YAML": {archive: func(t *testing.T) []byte { return zipEntries(t, entry{name: "pack.yaml", body: "{["}) }, reason: ReasonInvalidManifest},
		"an unknown pack.yaml field": {archive: func(t *testing.T) []byte {
			return zipEntries(t, tiny(entry{name: "pack.yaml", body: packYAML("agents/a.yaml") + "colour: red\n"})[1:]...)
		}, reason: ReasonInvalidManifest},
		"the wrong kind":                             {archive: manifestCase("kind: Pack", "kind: Chart"), reason: ReasonInvalidManifest, field: "kind"},
		"the wrong apiVersion":                       {archive: manifestCase("apiVersion: platform/v1", "apiVersion: platform/v2"), reason: ReasonInvalidManifest, field: "apiVersion"},
		"a version with a leading v":                 {archive: manifestCase("version: 1.0.0", "version: v1.0.0"), reason: ReasonInvalidManifest, field: "metadata.version"},
		"a version without a patch":                  {archive: manifestCase("version: 1.0.0", "version: \"1.0\""), reason: ReasonInvalidManifest, field: "metadata.version"},
		"a version with a leading zero":              {archive: manifestCase("version: 1.0.0", "version: 01.0.0"), reason: ReasonInvalidManifest, field: "metadata.version"},
		"an upper-case Pack name":                    {archive: manifestCase("name: tiny", "name: Tiny"), reason: ReasonInvalidManifest, field: "metadata.name"},
		"CVE-2024-25620: a Pack name that traverses": {archive: manifestCase("name: tiny", "name: ../../etc"), reason: ReasonInvalidManifest, field: "metadata.name"},
		"a publisher with a dot":                     {archive: manifestCase("publisher: acme", "publisher: acme.evil"), reason: ReasonInvalidManifest, field: "metadata.publisher"},
		"an unknown audience":                        {archive: manifestCase("version: 1.0.0", "version: 1.0.0\n  audience: everyone"), reason: ReasonInvalidManifest, field: "metadata.audience"},
		"an unknown purpose":                         {archive: manifestCase("version: 1.0.0", "version: 1.0.0\n  purpose: demo"), reason: ReasonInvalidManifest, field: "metadata.purpose"},
		"requirements":                               {archive: manifestCase("  resources:", "  requirements:\n  - kind: Pack\n    name: base\n  resources:"), reason: ReasonRequirements, field: "definition.requirements"},
		"a binding of an unknown target kind":        {archive: manifestCase("definition:\n", "definition:\n  bindings:\n  - name: v\n    targetKind: vault\n"), reason: ReasonInvalidManifest, field: "definition.bindings[0].targetKind"},
		"a binding declared twice": {archive: manifestCase("definition:\n", "definition:\n  bindings:\n  - name: m\n    targetKind: modelProfile\n  - name: m\n    targetKind: secret\n"),
			reason: ReasonInvalidManifest, field: "definition.bindings[1].name"},
		"no resources": {archive: func(t *testing.T) []byte {
			return zipEntries(t, entry{name: "pack.yaml", body: strings.Replace(packYAML(), "  resources:\n", "  resources: []\n", 1)})
		}, reason: ReasonInvalidManifest, field: "definition.resources"},
		"CVE-2024-25620: a listed path that traverses": {archive: func(t *testing.T) []byte {
			return zipEntries(t, entry{name: "pack.yaml", body: packYAML("../agents/a.yaml")}, entry{name: "agents/a.yaml", body: agentA})
		}, reason: ReasonParentTraversal, path: "../agents/a.yaml", field: "definition.resources[0]"},
		"a listed absolute path": {archive: func(t *testing.T) []byte {
			return zipEntries(t, entry{name: "pack.yaml", body: packYAML("/agents/a.yaml")}, entry{name: "agents/a.yaml", body: agentA})
		}, reason: ReasonAbsolutePath, field: "definition.resources[0]"},
		"a path listed twice": {archive: func(t *testing.T) []byte {
			return zipEntries(t, entry{name: "pack.yaml", body: packYAML("agents/a.yaml", "agents/a.yaml")}, entry{name: "agents/a.yaml", body: agentA})
		}, reason: ReasonDuplicatePath, field: "definition.resources[1]"},
		"pack.yaml listed as a resource": {archive: func(t *testing.T) []byte {
			return zipEntries(t, entry{name: "pack.yaml", body: packYAML("agents/a.yaml", "pack.yaml")}, entry{name: "agents/a.yaml", body: agentA})
		}, reason: ReasonInvalidManifest, field: "definition.resources[1]"},
		"an unlisted file": {archive: func(t *testing.T) []byte {
			return zipEntries(t, tiny(entry{name: "scripts/install.sh", body: "rm -rf /"})...)
		}, reason: ReasonUnlistedEntry, path: "scripts/install.sh"},
		"an unlisted folder": {archive: func(t *testing.T) []byte {
			return zipEntries(t, tiny(entry{name: "empty/", mode: fs.ModeDir | 0o755})...)
		}, reason: ReasonUnlistedEntry, path: "empty/"},
		"a listed file that is missing": {archive: func(t *testing.T) []byte {
			return zipEntries(t, entry{name: "pack.yaml", body: packYAML("agents/a.yaml", "agents/b.yaml")}, entry{name: "agents/a.yaml", body: agentA})
		}, reason: ReasonMissingEntry, path: "agents/b.yaml", field: "definition.resources[1]"},
		"a file too large by content": {archive: func(t *testing.T) []byte { return zipEntries(t, tiny()[0], bigAgent(MaxFileExpandedBytes)) }, reason: ReasonFileTooLarge},

		"a Secret":           {archive: resourceCase("apiVersion: platform/v1\nkind: Secret\nmetadata:\n  name: s\ndefinition: {}\n"), reason: ReasonUnsupportedKind, path: "resources/r.yaml", field: "kind"},
		"a Vault":            {archive: resourceCase("apiVersion: platform/v1\nkind: Vault\nmetadata:\n  name: v\ndefinition: {}\n"), reason: ReasonUnsupportedKind},
		"a Tool":             {archive: resourceCase("apiVersion: platform/v1\nkind: Tool\nmetadata:\n  name: t\ndefinition: {}\n"), reason: ReasonUnsupportedKind},
		"an InstalledPack":   {archive: resourceCase("apiVersion: platform/v1\nkind: InstalledPack\nmetadata:\n  name: p\ndefinition: {}\n"), reason: ReasonUnsupportedKind},
		"a kube ConfigMap":   {archive: resourceCase("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata: {}\n"), reason: ReasonInvalidResource, field: "apiVersion"},
		"a kind-less object": {archive: resourceCase("apiVersion: platform/v1\nmetadata:\n  name: c\ndefinition: {}\n"), reason: ReasonUnsupportedKind},
		"the same Agent twice": {archive: func(t *testing.T) []byte {
			return zipEntries(t, entry{name: "pack.yaml", body: packYAML("agents/a.yaml", "agents/a-again.yaml")}, entry{name: "agents/a.yaml", body: agentA}, entry{name: "agents/a-again.yaml", body: agentA})
		}, reason: ReasonDuplicateResource, path: "agents/a-again.yaml"},
		"a namespace":                  {archive: resourceCase(strings.Replace(agentA, "  name: a\n", "  name: a\n  namespace: default\n", 1)), reason: ReasonNamespaceSet, field: "metadata.namespace"},
		"an unknown definition field":  {archive: resourceCase(agentA + "  colour: red\n"), reason: ReasonInvalidResource, path: "resources/r.yaml", field: "definition.colour"},
		"an unknown top-level field":   {archive: resourceCase(agentA + "spec: {}\n"), reason: ReasonInvalidResource, field: "spec"},
		"a status":                     {archive: resourceCase(agentA + "status:\n  phase: Ready\n"), reason: ReasonInvalidResource, field: "status"},
		"a field of the wrong type":    {archive: resourceCase(strings.Replace(agentA, "displayName: A", "displayName: 5", 1)), reason: ReasonInvalidResource, field: "definition.displayName"},
		"an invalid object name":       {archive: resourceCase(strings.Replace(agentA, "name: a", "name: A_b", 1)), reason: ReasonInvalidResource, field: "metadata.name"},
		"server-set metadata":          {archive: resourceCase(strings.Replace(agentA, "  name: a\n", "  name: a\n  uid: x\n", 1)), reason: ReasonInvalidResource, field: "metadata.uid"},
		"a forged ownership label":     {archive: resourceCase(strings.Replace(agentA, "  name: a\n", "  name: a\n  tags:\n    platform/pack: other.pack\n", 1)), reason: ReasonInvalidResource, field: "metadata.labels.platform/pack"},
		"a forged fingerprint":         {archive: resourceCase(strings.Replace(agentA, "  name: a\n", "  name: a\n  annotations:\n    platform/pack-fingerprint: x\n", 1)), reason: ReasonInvalidResource},
		"tags and labels both":         {archive: resourceCase(strings.Replace(agentA, "  name: a\n", "  name: a\n  tags: {a: b}\n  labels: {a: b}\n", 1)), reason: ReasonInvalidResource, field: "metadata.tags"},
		"two manifests in one file":    {archive: resourceCase(agentA + "---\n" + strings.Replace(agentA, "name: a", "name: b", 1)), reason: ReasonInvalidResource},
		"no definition":                {archive: resourceCase("apiVersion: platform/v1\nkind: Agent\nmetadata:\n  name: a\n"), reason: ReasonInvalidResource, field: "definition"},
		"a resource that is not YAML":  {archive: resourceCase("kind: [Agent"), reason: ReasonInvalidResource},
		"an Agent's CEL rule":          {archive: resourceCase(agentA + "  modelProfile:\n    name: x\n    resourceId: abc\n"), reason: ReasonInvalidResource, field: "definition.modelProfile"},
		"a ModelProvider without type": {archive: resourceCase("apiVersion: platform/v1\nkind: ModelProvider\nmetadata:\n  name: p\ndefinition:\n  displayName: P\n"), reason: ReasonInvalidResource, field: "definition.type"},
		"a Prompt Entry without a PrimaryInput field": {archive: resourceCase("apiVersion: platform/v1\nkind: Entry\nmetadata:\n  name: e\ndefinition:\n  type: Prompt\n  binding:\n    agent:\n      name: a\n  fields:\n  - name: x\n    label: X\n    type: Text\n    role: Parameter\n"),
			reason: ReasonInvalidResource, field: "definition.fields"},
		"a Direct Flow without a target": {archive: resourceCase("apiVersion: platform/v1\nkind: Flow\nmetadata:\n  name: f\ndefinition:\n  flowKind: Direct\n"), reason: ReasonInvalidResource},
		"an unknown binding":             {archive: resourceCase(agentA + "  modelProfile:\n    binding: nowhere\n"), reason: ReasonUnknownBinding, path: "resources/r.yaml", field: "definition.modelProfile.binding"},
		"a Secret binding where a ModelProfile is needed": {archive: func(t *testing.T) []byte {
			return zipEntries(t, entry{name: "pack.yaml", body: withBindings(packYAML("resources/r.yaml"), "  - name: key\n    targetKind: secret\n")}, entry{name: "resources/r.yaml", body: agentA + "  modelProfile:\n    binding: key\n"})
		}, reason: ReasonUnknownBinding, field: "definition.modelProfile.binding"},
		"an unknown Secret binding": {archive: resourceCase("apiVersion: platform/v1\nkind: ModelProvider\nmetadata:\n  name: p\ndefinition:\n  type: OpenAICompatible\n  endpoint: https://example.invalid/v1\n  credential:\n    binding: api-key\n"),
			reason: ReasonUnknownBinding, field: "definition.credential.binding"},
		"a binding reference with a name too": {archive: func(t *testing.T) []byte {
			return zipEntries(t, entry{name: "pack.yaml", body: withBindings(packYAML("resources/r.yaml"), "  - name: m\n    targetKind: modelProfile\n")}, entry{name: "resources/r.yaml", body: agentA + "  modelProfile:\n    binding: m\n    name: other\n"})
		}, reason: ReasonInvalidResource, field: "definition.modelProfile"},
	}
	if len(cases) < 50 {
		t.Fatalf("the corpus has %d archives; at least 50", len(cases))
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Read(c.archive(t), "case.zip")
			var perr *Error
			g.Expect(errors.As(err, &perr)).To(BeTrue(), "refused with a *pack.Error, got %v", err)
			g.Expect(perr.Reason).To(Equal(c.reason), perr.Error())
			if c.path != "" {
				g.Expect(perr.Path).To(Equal(c.path), perr.Error())
			}
			if c.field != "" {
				g.Expect(perr.Field).To(Equal(c.field), perr.Error())
			}
		})
	}
}

// manifestCase is the tiny archive with pack.yaml edited.
func manifestCase(old, new string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte {
		es := tiny()
		if !strings.Contains(es[0].body, old) {
			t.Fatalf("pack.yaml has no %q", old)
		}
		es[0].body = strings.Replace(es[0].body, old, new, 1)
		return zipEntries(t, es...)
	}
}

func resourceCase(manifest string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte { return zipEntries(t, oneResource(manifest)...) }
}

// TestAZipBombNeverExpandsPastTheLimit measures what reading a bomb (256 MiB of zeros in
// 256 KiB, its header claiming 100 bytes) allocates in all: a few times the per-file limit
// (the buffer doubles up to it), under the archive's expanded limit, never the bomb's size.
func TestAZipBombNeverExpandsPastTheLimit(t *testing.T) {
	g := NewWithT(t)
	d := bombData(t)
	archive := zipRaw(t, tiny(), rawEntry{header: zip.FileHeader{Name: "bomb", Method: zip.Deflate, CompressedSize64: uint64(len(d)), UncompressedSize64: 100}, data: d})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Read(archive, "bomb.zip")
	runtime.ReadMemStats(&after)
	g.Expect(err).To(MatchError(ContainSubstring(string(ReasonFileTooLarge))))
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("reading a 256 MiB bomb allocated %d KiB", allocated>>10)
	g.Expect(allocated).To(BeNumerically("<", MaxExpandedBytes), "allocated %d bytes", allocated)
}
