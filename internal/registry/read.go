package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
)

var (
	digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	// Names of publishers, Sources and shards follow the Pack rule (DNS labels).
	nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// Versions are opaque, but safe in a URL path segment and a file name.
	versionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+~-]*$`)
)

// Digest is the canonical digest of b: sha256:<lowercase hex>.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ValidDigest reports whether d is a canonical sha256:<64 lowercase hex> digest.
func ValidDigest(d string) bool { return digestRE.MatchString(d) }

// ReadLimited reads r up to limit bytes, never more than limit+1, and refuses a longer body.
func ReadLimited(r io.Reader, limit int64, document string) ([]byte, error) {
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(r, limit+1))
	if err != nil {
		var rerr *Error
		if errors.As(err, &rerr) {
			if rerr.Document == "" {
				rerr.Document = document
			}
			return nil, rerr
		}
		return nil, &Error{Code: CodeUnavailable, Document: document, Detail: "reading the body: " + err.Error()}
	}
	if n > limit {
		return nil, errorf(CodeTooLarge, document, "larger than the contract's limit of %d bytes", limit)
	}
	return buf.Bytes(), nil
}

// ReadIndex reads an index document of at most MaxIndexBytes and returns it with its digest.
func ReadIndex(r io.Reader) (*Index, string, error) {
	b, err := ReadLimited(r, MaxIndexBytes, "index")
	if err != nil {
		return nil, "", err
	}
	var idx Index
	if err := decodeStrict(b, &idx, "index"); err != nil {
		return nil, "", err
	}
	if err := validateIndex(&idx); err != nil {
		return nil, "", err
	}
	return &idx, Digest(b), nil
}

// ReadShard reads a shard of at most MaxShardBytes; when want is not empty the shard's digest
// must be it (the digest the index names).
func ReadShard(r io.Reader, want string) (*Shard, string, error) {
	b, err := ReadLimited(r, MaxShardBytes, "shard")
	if err != nil {
		return nil, "", err
	}
	d := Digest(b)
	if want != "" && d != want {
		return nil, "", errorf(CodeDigestMismatch, "shard", "its digest %s is not %s, the one the index names", d, want)
	}
	var s Shard
	if err := decodeStrict(b, &s, "shard"); err != nil {
		return nil, "", err
	}
	if err := validateShard(&s); err != nil {
		return nil, "", err
	}
	return &s, d, nil
}

// ReadManifest reads a manifest of at most MaxManifestBytes; when want is not empty its digest
// must be it (the digest the shard names).
func ReadManifest(r io.Reader, want string) (*Manifest, string, error) {
	b, err := ReadLimited(r, MaxManifestBytes, "manifest")
	if err != nil {
		return nil, "", err
	}
	d := Digest(b)
	if want != "" && d != want {
		return nil, "", errorf(CodeDigestMismatch, "manifest", "its digest %s is not %s, the one the shard names", d, want)
	}
	var m Manifest
	if err := decodeStrict(b, &m, "manifest"); err != nil {
		return nil, "", err
	}
	if err := validateManifest(&m); err != nil {
		return nil, "", err
	}
	return &m, d, nil
}

// decodeStrict decodes one JSON object into v: unknown fields, duplicate keys and trailing data
// are refused, so that every reader of the same bytes sees the same document.
func decodeStrict(b []byte, v any, document string) error {
	if err := checkDuplicateKeys(b); err != nil {
		return errorf(CodeInvalidDocument, document, "%s", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errorf(CodeInvalidDocument, document, "not a %s document: %s", document, jsonDetail(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(CodeInvalidDocument, document, "data after the document")
	}
	return nil
}

func jsonDetail(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Sprintf("field %q is not a %s", typeErr.Field, typeErr.Type)
	}
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return msg
}

// checkDuplicateKeys walks the tokens of b and refuses an object with one key twice.
func checkDuplicateKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		object bool
		keys   map[string]struct{}
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not JSON: %s", jsonDetail(err))
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if k, isString := tok.(string); isString && top != nil && top.object && top.key {
			if _, dup := top.keys[k]; dup {
				return fmt.Errorf("key %q appears twice in one object", k)
			}
			top.keys[k] = struct{}{}
			top.key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]struct{}{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: in an object, a key comes next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}

func checkHeader(apiVersion, kind, wantKind, document string) error {
	if apiVersion != APIVersion || kind != wantKind {
		return errorf(CodeUnsupportedVersion, document, "apiVersion %q kind %q is not %s %s", clip(apiVersion), clip(kind), APIVersion, wantKind)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func invalid(document, field, format string, args ...any) *Error {
	return errorf(CodeInvalidDocument, document, "%s: %s", field, fmt.Sprintf(format, args...))
}

func validateIndex(idx *Index) error {
	if err := checkHeader(idx.APIVersion, idx.Kind, KindIndex, "index"); err != nil {
		return err
	}
	if idx.Serial < 1 {
		return invalid("index", "serial", "must be a positive integer")
	}
	if len(idx.Shards) > MaxShards {
		return invalid("index", "shards", "more than %d", MaxShards)
	}
	names := map[string]struct{}{}
	for i, s := range idx.Shards {
		f := fmt.Sprintf("shards[%d]", i)
		if !validName(s.Name) {
			return invalid("index", f+".name", "must be a lowercase DNS label")
		}
		if _, dup := names[s.Name]; dup {
			return invalid("index", f+".name", "%q appears twice", s.Name)
		}
		names[s.Name] = struct{}{}
		if err := CheckLocation(s.Location); err != nil {
			return invalid("index", f+".location", "%s", err.Detail)
		}
		if !ValidDigest(s.Digest) {
			return invalid("index", f+".digest", "must be sha256:<64 lowercase hex digits>")
		}
	}
	return nil
}

func validName(s string) bool { return len(s) <= 63 && nameRE.MatchString(s) }

// ValidVersion reports whether v is a version the contract allows: opaque, 1 to 128 characters
// of letters, digits and . _ + ~ -, starting with a letter or digit.
func ValidVersion(v string) bool { return len(v) <= MaxVersionLength && versionRE.MatchString(v) }

func validateShard(s *Shard) error {
	if err := checkHeader(s.APIVersion, s.Kind, KindShard, "shard"); err != nil {
		return err
	}
	if !validName(s.Name) {
		return invalid("shard", "name", "must be a lowercase DNS label")
	}
	if len(s.Publishers) > MaxPublishersPerShard {
		return invalid("shard", "publishers", "more than %d", MaxPublishersPerShard)
	}
	if len(s.Sources) > MaxSourcesPerShard {
		return invalid("shard", "sources", "more than %d", MaxSourcesPerShard)
	}
	publishers := map[string]struct{}{}
	for i, p := range s.Publishers {
		f := fmt.Sprintf("publishers[%d]", i)
		if !validName(p.Name) {
			return invalid("shard", f+".name", "must be a lowercase DNS label")
		}
		if _, dup := publishers[p.Name]; dup {
			return invalid("shard", f+".name", "%q appears twice", p.Name)
		}
		publishers[p.Name] = struct{}{}
		switch p.Status {
		case Declared, Verified, Official, Revoked:
		default:
			return invalid("shard", f+".status", "must be Declared, Verified, Official or Revoked")
		}
		if len(p.DisplayName) > MaxDisplayLength {
			return invalid("shard", f+".displayName", "longer than %d", MaxDisplayLength)
		}
	}
	sources := map[string]struct{}{}
	for i, src := range s.Sources {
		f := fmt.Sprintf("sources[%d]", i)
		if _, ok := publishers[src.Publisher]; !ok {
			return invalid("shard", f+".publisher", "%q is not among the shard's publishers", clip(src.Publisher))
		}
		if !validName(src.Name) {
			return invalid("shard", f+".name", "must be a lowercase DNS label")
		}
		id := src.Publisher + "/" + src.Name
		if _, dup := sources[id]; dup {
			return invalid("shard", f, "%s appears twice", id)
		}
		sources[id] = struct{}{}
		if len(src.DisplayName) > MaxDisplayLength || len(src.Description) > MaxDescriptionLength {
			return invalid("shard", f, "displayName or description too long")
		}
		if len(src.Versions) > MaxVersionsPerSource {
			return invalid("shard", f+".versions", "more than %d", MaxVersionsPerSource)
		}
		versions := map[string]struct{}{}
		for j, v := range src.Versions {
			vf := fmt.Sprintf("%s.versions[%d]", f, j)
			if !ValidVersion(v.Version) {
				return invalid("shard", vf+".version", "must be 1 to %d letters, digits or . _ + ~ -, starting with a letter or digit", MaxVersionLength)
			}
			if _, dup := versions[v.Version]; dup {
				return invalid("shard", vf+".version", "%q appears twice", v.Version)
			}
			versions[v.Version] = struct{}{}
			if err := CheckLocation(v.Manifest); err != nil {
				return invalid("shard", vf+".manifest", "%s", err.Detail)
			}
			if !ValidDigest(v.ManifestDigest) {
				return invalid("shard", vf+".manifestDigest", "must be sha256:<64 lowercase hex digits>")
			}
			if len(v.Compatibility.PackAPIVersions) == 0 || len(v.Compatibility.PackAPIVersions) > MaxCompatibility {
				return invalid("shard", vf+".compatibility.packApiVersions", "must list 1 to %d Pack apiVersions", MaxCompatibility)
			}
			for _, a := range v.Compatibility.PackAPIVersions {
				if a == "" || len(a) > MaxDisplayLength {
					return invalid("shard", vf+".compatibility.packApiVersions", "an empty or too long apiVersion")
				}
			}
		}
	}
	return nil
}

func validateManifest(m *Manifest) error {
	if err := checkHeader(m.APIVersion, m.Kind, KindManifest, "manifest"); err != nil {
		return err
	}
	if !validName(m.Publisher) {
		return invalid("manifest", "publisher", "must be a lowercase DNS label")
	}
	if !validName(m.Source) {
		return invalid("manifest", "source", "must be a lowercase DNS label")
	}
	if !ValidVersion(m.Version) {
		return invalid("manifest", "version", "must be 1 to %d letters, digits or . _ + ~ -, starting with a letter or digit", MaxVersionLength)
	}
	if err := CheckLocation(m.Pack.Location); err != nil {
		return invalid("manifest", "pack.location", "%s", err.Detail)
	}
	if !ValidDigest(m.Pack.Digest) {
		return invalid("manifest", "pack.digest", "must be sha256:<64 lowercase hex digits>")
	}
	if m.Pack.Size < 1 || m.Pack.Size > MaxArchiveBytes {
		return invalid("manifest", "pack.size", "must be 1 to %d bytes", MaxArchiveBytes)
	}
	return nil
}

// Matches reports whether the manifest describes exactly publisher/source at version.
func (m *Manifest) Matches(publisher, source, version string) bool {
	return m.Publisher == publisher && m.Source == source && m.Version == version
}
