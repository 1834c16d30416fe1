package pack

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
)

var (
	packNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// semverRE is semantic versioning 2.0.0 exactly (the SemanticVersion schema's pattern).
	semverRE   = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-((0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?(\+([0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*))?$`)
	driveRE    = regexp.MustCompile(`^[A-Za-z]:`)
	readmes    = map[string]bool{"README.md": true, "README": true}
	packKinds  = map[string]bool{}
	audiences  = map[string]bool{"personal": true, "professional": true, "universal": true}
	purposes   = map[string]bool{"sample": true, "template": true, "standard": true}
	targetKind = map[BindingTargetKind]bool{ModelProfileBinding: true, SecretBinding: true}
)

func init() {
	for _, k := range InstallOrder {
		packKinds[string(k)] = true
	}
}

// Unix file types in the upper 16 bits of a ZIP entry's external attributes (made by Unix).
const (
	unixTypeMask    = 0o170000
	unixRegular     = 0o100000
	unixDirectory   = 0o040000
	unixSymlink     = 0o120000
	creatorUnix     = 3
	creatorMacOSX   = 19
	flagEncrypted   = 0x1
	maxManifestSize = 1 << 20
)

func refuse(reason Reason, path, detail string) *Error {
	return &Error{Reason: reason, Path: path, Detail: detail}
}

// Read validates a Pack archive completely and returns it. Every refusal is a *Error. The
// limits hold while reading: no entry is expanded past MaxFileExpandedBytes and the archive
// past MaxExpandedBytes, whatever its headers claim. fileName is only for messages.
func Read(data []byte, fileName string) (*Archive, error) {
	if len(data) > MaxCompressedBytes {
		return nil, refuse(ReasonTooLarge, "", fmt.Sprintf("the archive is %d bytes; at most %d are accepted", len(data), MaxCompressedBytes))
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		// ErrInsecurePath comes with a usable reader; our own path rules refuse those names
		// with a precise reason below.
		name := fileName
		if name == "" {
			name = "the upload"
		}
		return nil, refuse(ReasonNotZip, "", fmt.Sprintf("%s is not a ZIP archive (%v)", displayName(name), err))
	}
	if len(zr.File) > 2*MaxFiles {
		return nil, refuse(ReasonTooManyFiles, "", fmt.Sprintf("the archive has %d entries; at most %d files are accepted", len(zr.File), MaxFiles))
	}
	files := map[string]*zip.File{}
	dirs := map[string]bool{}
	folded := map[string]string{}
	count := 0
	for _, f := range zr.File {
		name := f.Name
		isDir := strings.HasSuffix(name, "/") && f.UncompressedSize64 == 0
		clean := strings.TrimSuffix(name, "/")
		if e := checkPath(clean); e != nil {
			e.Path = name
			return nil, e
		}
		if e := checkEntryType(&f.FileHeader, isDir); e != nil {
			return nil, e
		}
		if _, dup := files[clean]; dup || dirs[clean] {
			return nil, refuse(ReasonDuplicatePath, name, "the archive holds this path more than once")
		}
		if other, dup := folded[strings.ToLower(clean)]; dup {
			return nil, refuse(ReasonCaseCollision, name, fmt.Sprintf("collides with %s on a case-insensitive file system", other))
		}
		folded[strings.ToLower(clean)] = clean
		if isDir {
			dirs[clean] = true
			continue
		}
		count++
		if count > MaxFiles {
			return nil, refuse(ReasonTooManyFiles, "", fmt.Sprintf("the archive has more than %d files", MaxFiles))
		}
		files[clean] = f
	}
	// A file must not also be a folder of another entry: extracting both is ambiguous.
	for p := range files {
		for d := parentDir(p); d != ""; d = parentDir(d) {
			if _, clash := files[d]; clash {
				return nil, refuse(ReasonDuplicatePath, p, fmt.Sprintf("%s is both a file and a folder", d))
			}
		}
	}

	budget := int64(MaxExpandedBytes)
	contents := map[string][]byte{}
	read := func(p string) ([]byte, error) {
		if b, ok := contents[p]; ok {
			return b, nil
		}
		b, err := expand(files[p], &budget)
		if err != nil {
			return nil, err
		}
		contents[p] = b
		return b, nil
	}
	// Every entry is expanded (and so counted against the limits), listed or not, in archive
	// order, before anything is interpreted: a refusal never depends on which entry is looked at.
	for _, f := range zr.File {
		p := strings.TrimSuffix(f.Name, "/")
		if _, ok := files[p]; ok {
			if _, err := read(p); err != nil {
				return nil, err
			}
		}
	}

	raw, ok := files[ManifestFile]
	if !ok {
		return nil, refuse(ReasonMissingManifest, ManifestFile, "the archive has no pack.yaml at its root")
	}
	_ = raw
	m, err := parseManifest(contents[ManifestFile])
	if err != nil {
		return nil, err
	}

	archive := &Archive{Manifest: *m}
	sum := sha256.Sum256(data)
	archive.Digest = platformv1.Digest("sha256:" + hex.EncodeToString(sum[:]))

	listed := map[string]bool{}
	for i, p := range m.Definition.Resources {
		field := fmt.Sprintf("definition.resources[%d]", i)
		if e := checkPath(p); e != nil {
			e.Path, e.Field = p, field
			return nil, e
		}
		if p == ManifestFile || readmes[p] {
			return nil, &Error{Reason: ReasonInvalidManifest, Path: ManifestFile, Field: field, Detail: p + " is not a resource manifest"}
		}
		if listed[p] {
			return nil, &Error{Reason: ReasonDuplicatePath, Path: p, Field: field, Detail: "listed more than once"}
		}
		listed[p] = true
	}
	names := make([]string, 0, len(files))
	for p := range files {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		if p != ManifestFile && !readmes[p] && !listed[p] {
			return nil, refuse(ReasonUnlistedEntry, p, "the archive holds a file that pack.yaml does not list in definition.resources")
		}
	}
	dirNames := make([]string, 0, len(dirs))
	for d := range dirs {
		dirNames = append(dirNames, d)
	}
	sort.Strings(dirNames)
	for _, d := range dirNames {
		used := false
		for p := range listed {
			if strings.HasPrefix(p, d+"/") {
				used = true
				break
			}
		}
		if !used {
			return nil, refuse(ReasonUnlistedEntry, d+"/", "the archive holds a folder that no listed resource is in")
		}
	}
	for i, p := range m.Definition.Resources {
		if _, ok := files[p]; !ok {
			return nil, &Error{Reason: ReasonMissingEntry, Path: p, Field: fmt.Sprintf("definition.resources[%d]", i), Detail: "pack.yaml lists a resource the archive does not hold"}
		}
	}
	for p := range readmes {
		if b, ok := contents[p]; ok {
			if !utf8.Valid(b) {
				return nil, refuse(ReasonInvalidPath, p, "the README is not UTF-8 text")
			}
			archive.Readme = string(b)
		}
	}
	if _, both := files["README.md"]; both {
		archive.Readme = string(contents["README.md"])
	}

	declared := map[string]BindingDeclaration{}
	for _, b := range m.Definition.Bindings {
		declared[b.Name] = b
	}
	seen := map[string]string{}
	for _, p := range m.Definition.Resources {
		r, err := parseResource(p, contents[p], declared)
		if err != nil {
			return nil, err
		}
		key := Key(r.Kind, r.Name)
		if other, dup := seen[key]; dup {
			return nil, refuse(ReasonDuplicateResource, p, fmt.Sprintf("%s is also defined by %s", key, other))
		}
		seen[key] = p
		archive.Resources = append(archive.Resources, *r)
	}
	sortResources(archive.Resources)
	return archive, nil
}

// sortResources orders resources by InstallOrder, then by name.
func sortResources(rs []Resource) {
	rank := map[platformv1.PackResourceKind]int{}
	for i, k := range InstallOrder {
		rank[k] = i
	}
	sort.SliceStable(rs, func(i, j int) bool {
		if rank[rs[i].Kind] != rank[rs[j].Kind] {
			return rank[rs[i].Kind] < rank[rs[j].Kind]
		}
		return rs[i].Name < rs[j].Name
	})
}

func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return p[:i]
}

// displayName keeps a file name safe to show: no control characters, bounded.
func displayName(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	if len(s) > 128 {
		s = s[:128]
	}
	return s
}

// checkPath applies the path rules to a name (without a trailing slash): relative, forward
// slashes only, no drive letter, no `..` (also percent-encoded), no empty or `.` segment.
func checkPath(p string) *Error {
	switch {
	case p == "":
		return refuse(ReasonInvalidPath, p, "an entry has an empty name")
	case !utf8.ValidString(p):
		return refuse(ReasonInvalidPath, p, "the name is not valid UTF-8")
	case strings.ContainsRune(p, '\\'):
		return refuse(ReasonBackslash, p, "names use forward slashes only")
	case strings.HasPrefix(p, "/"):
		return refuse(ReasonAbsolutePath, p, "names are relative to the archive root")
	case driveRE.MatchString(p):
		return refuse(ReasonDriveLetter, p, "names carry no drive letter")
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return refuse(ReasonInvalidPath, p, "the name holds a control character")
		}
	}
	if hasTraversal(p) {
		return refuse(ReasonParentTraversal, p, "the name leads out of its folder with ..")
	}
	// A name that means something else once percent-decoded (as a web server or an unpacking
	// tool may decode it) is refused when the decoded name escapes or changes folders.
	if strings.Contains(p, "%") {
		if dec, err := url.PathUnescape(p); err == nil && dec != p {
			if hasTraversal(dec) || strings.ContainsAny(dec, "\\") || strings.HasPrefix(dec, "/") || strings.Count(dec, "/") != strings.Count(p, "/") {
				return refuse(ReasonParentTraversal, p, "the name escapes its folder once percent-decoded")
			}
		}
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." {
			return refuse(ReasonInvalidPath, p, "the name has an empty or . segment")
		}
	}
	return nil
}

func hasTraversal(p string) bool {
	for _, seg := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return true
		}
	}
	return false
}

// checkEntryType refuses links and other non-regular entries, encrypted entries and
// unsupported compression methods. Symbolic links are stored as a Unix file type in the
// external attributes; Go's fs.FileMode of the entry decodes them.
func checkEntryType(f *zip.FileHeader, isDir bool) *Error {
	creator := f.CreatorVersion >> 8
	if creator == creatorUnix || creator == creatorMacOSX {
		switch t := (f.ExternalAttrs >> 16) & unixTypeMask; t {
		case 0, unixRegular:
		case unixDirectory:
			if !isDir {
				return refuse(ReasonNotRegular, f.Name, "a folder entry with content")
			}
		case unixSymlink:
			return refuse(ReasonLink, f.Name, "symbolic links are not accepted")
		default:
			return refuse(ReasonNotRegular, f.Name, fmt.Sprintf("the entry is not a regular file (type %o)", t))
		}
	}
	mode := f.Mode()
	if mode&fs.ModeSymlink != 0 {
		return refuse(ReasonLink, f.Name, "symbolic links are not accepted")
	}
	if mode&(fs.ModeDevice|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeCharDevice|fs.ModeIrregular) != 0 {
		return refuse(ReasonNotRegular, f.Name, "the entry is not a regular file")
	}
	if mode.IsDir() && !isDir {
		return refuse(ReasonNotRegular, f.Name, "a folder entry with content")
	}
	if f.Flags&flagEncrypted != 0 {
		return refuse(ReasonUnsupportedEntry, f.Name, "encrypted entries are not accepted")
	}
	if f.Method != zip.Store && f.Method != zip.Deflate {
		return refuse(ReasonUnsupportedEntry, f.Name, fmt.Sprintf("compression method %d is not supported (store or deflate)", f.Method))
	}
	return nil
}

// expand reads one entry through a limited reader: never more than the per-file limit or the
// remaining total budget plus one byte, so a header that lies about sizes changes nothing.
func expand(f *zip.File, budget *int64) ([]byte, error) {
	if f.UncompressedSize64 > MaxFileExpandedBytes {
		return nil, refuse(ReasonFileTooLarge, f.Name, fmt.Sprintf("expands to %d bytes; at most %d per file", f.UncompressedSize64, MaxFileExpandedBytes))
	}
	if f.UncompressedSize64 > uint64(*budget) {
		return nil, refuse(ReasonExpandedTooLarge, f.Name, fmt.Sprintf("the archive expands past %d bytes in all", MaxExpandedBytes))
	}
	raw, err := f.OpenRaw()
	if err != nil {
		return nil, refuse(ReasonCorrupt, f.Name, err.Error())
	}
	// The entry is decompressed here, not by archive/zip's reader, so that what limits the
	// expansion is our limit, whatever size the header declares; the declared size and the
	// checksum are compared afterwards.
	var rc io.Reader = raw
	if f.Method == zip.Deflate {
		fr := flate.NewReader(raw)
		defer fr.Close()
		rc = fr
	}
	limit := min(int64(MaxFileExpandedBytes), *budget)
	b, err := readLimited(rc, limit, f.UncompressedSize64)
	n := int64(len(b))
	if n > limit {
		if limit < MaxFileExpandedBytes {
			return nil, refuse(ReasonExpandedTooLarge, f.Name, fmt.Sprintf("the archive expands past %d bytes in all", MaxExpandedBytes))
		}
		return nil, refuse(ReasonFileTooLarge, f.Name, fmt.Sprintf("expands past %d bytes", MaxFileExpandedBytes))
	}
	if err != nil {
		return nil, refuse(ReasonCorrupt, f.Name, fmt.Sprintf("the entry cannot be decompressed (%v)", err))
	}
	if uint64(n) != f.UncompressedSize64 {
		return nil, refuse(ReasonCorrupt, f.Name, fmt.Sprintf("the entry expands to %d bytes, not the %d its header declares", n, f.UncompressedSize64))
	}
	if crc32.ChecksumIEEE(b) != f.CRC32 {
		return nil, refuse(ReasonCorrupt, f.Name, "the entry's checksum does not match its content")
	}
	*budget -= n
	return b, nil
}

// readLimited reads at most limit+1 bytes. Its buffer starts at the declared size (when within
// the limit) and grows by doubling, but never past limit+1, so that a header that lies costs
// at most about twice the limit.
func readLimited(r io.Reader, limit int64, declared uint64) ([]byte, error) {
	size := int64(512)
	if declared < uint64(limit) {
		size = max(size, int64(declared)+1)
	}
	b := make([]byte, 0, min(size, limit+1))
	for {
		if len(b) == cap(b) {
			if int64(len(b)) > limit {
				return b, nil
			}
			grown := make([]byte, len(b), min(int64(2*cap(b)), limit+1))
			copy(grown, b)
			b = grown
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// rawManifest is pack.yaml as written, before defaults.
type rawManifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string   `json:"name"`
		Publisher   string   `json:"publisher"`
		Version     string   `json:"version"`
		Audience    string   `json:"audience,omitempty"`
		Purpose     string   `json:"purpose,omitempty"`
		DisplayName string   `json:"displayName,omitempty"`
		Description string   `json:"description,omitempty"`
		Categories  []string `json:"categories,omitempty"`
		Tags        []string `json:"tags,omitempty"`
	} `json:"metadata"`
	Definition struct {
		Bindings     []BindingDeclaration `json:"bindings,omitempty"`
		Resources    []string             `json:"resources"`
		Requirements []any                `json:"requirements,omitempty"`
	} `json:"definition"`
	// Requirements at the top level is accepted as the spec's table lists it apart.
	Requirements []any `json:"requirements,omitempty"`
}

func manifestError(field, detail string) *Error {
	return &Error{Reason: ReasonInvalidManifest, Path: ManifestFile, Field: field, Detail: detail}
}

func parseManifest(b []byte) (*Manifest, error) {
	if len(b) > maxManifestSize {
		return nil, manifestError("", "pack.yaml is larger than 1 MiB")
	}
	var raw rawManifest
	if err := yaml.UnmarshalStrict(b, &raw); err != nil {
		return nil, manifestError("", yamlDetail(err))
	}
	if len(raw.Definition.Requirements) > 0 || len(raw.Requirements) > 0 {
		field := "definition.requirements"
		if len(raw.Requirements) > 0 {
			field = "requirements"
		}
		return nil, &Error{Reason: ReasonRequirements, Path: ManifestFile, Field: field, Detail: "requirements are not supported in this version of the Pack format; the list must be empty"}
	}
	if raw.APIVersion != manifest.SpecAPIVersion && raw.APIVersion != manifest.KubeAPIVersion {
		return nil, manifestError("apiVersion", fmt.Sprintf("must be %s", manifest.SpecAPIVersion))
	}
	if raw.Kind != "Pack" {
		return nil, manifestError("kind", "must be Pack")
	}
	md := raw.Metadata
	if !packNameRE.MatchString(md.Name) || len(md.Name) > 63 {
		return nil, manifestError("metadata.name", "a Pack name is 1 to 63 lowercase ASCII letters, digits and -, starting and ending with a letter or digit")
	}
	if !packNameRE.MatchString(md.Publisher) || len(md.Publisher) > 63 {
		return nil, manifestError("metadata.publisher", "a publisher is 1 to 63 lowercase ASCII letters, digits and -, starting and ending with a letter or digit")
	}
	if !semverRE.MatchString(md.Version) || len(md.Version) > 128 {
		return nil, manifestError("metadata.version", fmt.Sprintf("%q is not a semantic version (MAJOR.MINOR.PATCH, no leading v or zeros)", md.Version))
	}
	if md.Audience == "" {
		md.Audience = "universal"
	}
	if !audiences[md.Audience] {
		return nil, manifestError("metadata.audience", "must be personal, professional or universal")
	}
	if md.Purpose == "" {
		md.Purpose = "standard"
	}
	if !purposes[md.Purpose] {
		return nil, manifestError("metadata.purpose", "must be sample, template or standard")
	}
	if len(md.DisplayName) > 256 {
		return nil, manifestError("metadata.displayName", "at most 256 characters")
	}
	if len(md.Description) > 4096 {
		return nil, manifestError("metadata.description", "at most 4096 characters")
	}
	for name, list := range map[string][]string{"metadata.categories": md.Categories, "metadata.tags": md.Tags} {
		if len(list) > 32 {
			return nil, manifestError(name, "at most 32 items")
		}
		for i, s := range list {
			if s == "" || len(s) > 64 {
				return nil, manifestError(fmt.Sprintf("%s[%d]", name, i), "1 to 64 characters")
			}
		}
	}
	if len(raw.Definition.Resources) == 0 {
		return nil, manifestError("definition.resources", "a Pack contains at least one resource")
	}
	if len(raw.Definition.Resources) > MaxFiles {
		return nil, manifestError("definition.resources", fmt.Sprintf("at most %d resources", MaxFiles))
	}
	names := map[string]bool{}
	for i, b := range raw.Definition.Bindings {
		f := fmt.Sprintf("definition.bindings[%d]", i)
		if !packNameRE.MatchString(b.Name) || len(b.Name) > 63 {
			return nil, manifestError(f+".name", "a binding name is 1 to 63 lowercase ASCII letters, digits and -")
		}
		if names[b.Name] {
			return nil, manifestError(f+".name", fmt.Sprintf("binding %s is declared more than once", b.Name))
		}
		names[b.Name] = true
		if !targetKind[b.TargetKind] {
			return nil, manifestError(f+".targetKind", "must be modelProfile or secret")
		}
		if len(b.DisplayName) > 256 {
			return nil, manifestError(f+".displayName", "at most 256 characters")
		}
	}
	if len(raw.Definition.Bindings) > 64 {
		return nil, manifestError("definition.bindings", "at most 64 bindings")
	}
	return &Manifest{
		APIVersion: manifest.SpecAPIVersion,
		Kind:       "Pack",
		Metadata: ManifestMetadata{
			Name: md.Name, Publisher: md.Publisher, Version: md.Version, Audience: md.Audience, Purpose: md.Purpose,
			DisplayName: md.DisplayName, Description: md.Description, Categories: md.Categories, Tags: md.Tags,
		},
		Definition: ManifestDefinition{Bindings: raw.Definition.Bindings, Resources: raw.Definition.Resources},
	}, nil
}

// yamlDetail shortens a YAML/JSON decoding error to what a person needs.
func yamlDetail(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "error converting YAML to JSON: ")
	s = strings.TrimPrefix(s, "error unmarshaling JSON: while decoding JSON: ")
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// decodeYAML decodes one YAML document into the unstructured representation (int64 and
// float64 numbers, as kube objects hold them).
func decodeYAML(b []byte) (map[string]any, error) {
	js, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(js, &obj); err != nil {
		return nil, err
	}
	return obj, nil
}
