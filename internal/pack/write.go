package pack

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"platform.dev/platform/apis/platform/manifest"
)

// writeTime is the modification time of every entry Write produces (the earliest a ZIP holds),
// so that the archive depends on its content only.
var writeTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// ReadmeFile is the archive path Write gives a README.
const ReadmeFile = "README.md"

// Write produces a Pack archive deterministically: entries sorted by path, a fixed modification
// time and mode 0644, YAML with sorted keys in the spec spelling (`apiVersion: platform/v1`,
// `metadata.tags`). The same input gives byte-identical output. Each object keeps only what a
// Pack carries (apiVersion, kind, metadata.name, tags, annotations other than the platform's,
// definition); definition.resources is the sorted list of the files' paths. The result is read
// back with Read before it is returned, so Write never produces an archive Read refuses.
func Write(m Manifest, readme string, files []File) ([]byte, error) {
	paths := make([]string, 0, len(files))
	byPath := map[string][]byte{}
	for _, f := range files {
		if e := checkPath(f.Path); e != nil {
			e.Path = f.Path
			return nil, e
		}
		if f.Path == ManifestFile || readmes[f.Path] {
			return nil, refuse(ReasonInvalidManifest, f.Path, "is not a resource manifest path")
		}
		if _, dup := byPath[f.Path]; dup {
			return nil, refuse(ReasonDuplicatePath, f.Path, "two files have this path")
		}
		b, err := yaml.Marshal(exported(f.Object))
		if err != nil {
			return nil, &Error{Reason: ReasonInvalidResource, Path: f.Path, Detail: err.Error()}
		}
		byPath[f.Path] = b
		paths = append(paths, f.Path)
	}
	sort.Strings(paths)
	m.APIVersion = manifest.SpecAPIVersion
	m.Kind = "Pack"
	if m.Metadata.Audience == "" {
		m.Metadata.Audience = "universal"
	}
	if m.Metadata.Purpose == "" {
		m.Metadata.Purpose = "standard"
	}
	m.Definition.Resources = paths
	m.Definition.Requirements = nil
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	// Through a map, so that the manifest's keys are sorted like the resources' keys.
	pack, err := yaml.JSONToYAML(mb)
	if err != nil {
		return nil, err
	}
	byPath[ManifestFile] = pack
	names := append([]string{ManifestFile}, paths...)
	if readme != "" {
		byPath[ReadmeFile] = []byte(readme)
		names = append(names, ReadmeFile)
	}
	sort.Strings(names)

	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, name := range names {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: writeTime}
		h.SetMode(0o644)
		fw, err := w.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := fw.Write(byPath[name]); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if _, err := Read(buf.Bytes(), ""); err != nil {
		return nil, fmt.Errorf("the written archive is not valid: %w", err)
	}
	return buf.Bytes(), nil
}

// exported is obj as a Pack carries it, in the spec spelling.
func exported(obj map[string]any) map[string]any {
	obj = runtime.DeepCopyJSON(obj)
	out := map[string]any{}
	for _, k := range []string{"apiVersion", "kind", "definition"} {
		if v, ok := obj[k]; ok {
			out[k] = v
		}
	}
	md := map[string]any{}
	if in, ok := obj["metadata"].(map[string]any); ok {
		if n, ok := in["name"]; ok {
			md["name"] = n
		}
		for _, f := range []string{"labels", "tags", "annotations"} {
			m, ok := in[f].(map[string]any)
			if !ok {
				continue
			}
			kept := map[string]any{}
			for k, v := range m {
				if !strings.HasPrefix(k, platformPrefix) && !ignoredAnnotations[k] {
					kept[k] = v
				}
			}
			if len(kept) > 0 {
				md[f] = kept
			}
		}
	}
	out["metadata"] = md
	if out["apiVersion"] == nil {
		out["apiVersion"] = manifest.SpecAPIVersion
	}
	manifest.ToSpecSpelling(out)
	return out
}
