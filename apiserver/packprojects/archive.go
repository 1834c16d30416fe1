package packprojects

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"sigs.k8s.io/yaml"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/pack"
)

// writeArchive generates the archive of a manifest and its resources. It stands in for
// pack.Write until that lands on this branch; like it, the same input gives the same bytes: a
// fixed order, a fixed timestamp, canonical YAML (sorted keys) in the spec's spelling.
var writeArchive = func(m pack.Manifest, readme string, resources []pack.Resource) ([]byte, error) {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	add := func(path string, v any) error {
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		return addFile(w, path, data)
	}
	if err := add(pack.ManifestFile, m); err != nil {
		return nil, err
	}
	if readme != "" {
		if err := addFile(w, "README.md", []byte(readme)); err != nil {
			return nil, err
		}
	}
	for _, r := range resources {
		obj, err := deepCopy(r.Object)
		if err != nil {
			return nil, err
		}
		manifest.ToSpecSpelling(obj)
		if err := add(r.Path, obj); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// epoch is the modification time of every archive entry: the time of generation would make two
// archives of the same content differ.
var epoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

func addFile(w *zip.Writer, path string, data []byte) error {
	f, err := w.CreateHeader(&zip.FileHeader{Name: path, Method: zip.Deflate, Modified: epoch})
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return err
}

// Digest is `sha256:<hex>` of data.
func Digest(data []byte) platformv1.Digest {
	sum := sha256.Sum256(data)
	return platformv1.Digest("sha256:" + hex.EncodeToString(sum[:]))
}

// verifyArchive reads a generated archive as an upload would be read. It stands in for
// pack.Read until that lands on this branch: the archive must at least open as a ZIP whose
// entries are the manifest's.
var verifyArchive = func(data []byte, fileName string) error {
	r, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	if len(r.File) == 0 || r.File[0].Name != pack.ManifestFile {
		return &pack.Error{Reason: pack.ReasonMissingManifest}
	}
	return nil
}

// ErrTooLarge: the generated archive exceeds the Pack limit of compressed input.
var ErrTooLarge = fmt.Errorf("the generated archive exceeds %d bytes, the largest Pack archive", pack.MaxCompressedBytes)

// FileName is the download name of a Pack's archive.
func FileName(c Coordinate) string { return c.Publisher + "." + c.Name + "-" + c.Version + ".zip" }

// Generate writes the archive of a valid preview under coordinate c and verifies it as an upload
// would be verified. The same preview of the same objects gives the same bytes.
func (p *Preview) Generate(c Coordinate) ([]byte, error) {
	if c.Audience == "" {
		c.Audience = "universal"
	}
	if c.Purpose == "" {
		c.Purpose = "standard"
	}
	m, resources, err := p.Contents(c)
	if err != nil {
		return nil, err
	}
	data, err := writeArchive(m, "", resources)
	if err != nil {
		return nil, err
	}
	if len(data) > pack.MaxCompressedBytes {
		return nil, ErrTooLarge
	}
	if err := verifyArchive(data, FileName(c)); err != nil {
		return nil, fmt.Errorf("the generated archive does not read back: %w", err)
	}
	return data, nil
}
