package registry_test

import (
	"encoding/json"
	"strings"
	"testing"

	"platform.dev/platform/internal/registry"
)

const digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

const validIndex = `{"apiVersion":"registry.platform.dev/v1","kind":"Index","serial":7,
 "shards":[{"name":"acme","location":"shards/acme.json","digest":"` + digestA + `"}]}`

const validShard = `{"apiVersion":"registry.platform.dev/v1","kind":"Shard","name":"acme",
 "publishers":[{"name":"acme","displayName":"Acme","status":"Verified"}],
 "sources":[{"publisher":"acme","name":"hello","versions":[
   {"version":"1.0.0","manifest":"../manifests/acme/hello/1.0.0.json","manifestDigest":"` + digestA + `",
    "compatibility":{"packApiVersions":["platform/v1"]},"isCatalogLatest":true},
   {"version":"2024-06-01.build+7","manifest":"../manifests/acme/hello/b.json","manifestDigest":"` + digestA + `",
    "compatibility":{"packApiVersions":["platform/v2"]},"isCatalogLatest":false}]}]}`

const validManifest = `{"apiVersion":"registry.platform.dev/v1","kind":"Manifest","publisher":"acme","source":"hello",
 "version":"1.0.0","pack":{"location":"../../../packs/acme/hello/1.0.0.zip","digest":"` + digestA + `","size":1234}}`

func TestTheReadersAcceptTheContract(t *testing.T) {
	idx, d, err := registry.ReadIndex(strings.NewReader(validIndex))
	if err != nil || idx.Serial != 7 || d != registry.Digest([]byte(validIndex)) {
		t.Fatalf("ReadIndex = %+v, %s, %v", idx, d, err)
	}
	s, _, err := registry.ReadShard(strings.NewReader(validShard), registry.Digest([]byte(validShard)))
	if err != nil || len(s.Sources[0].Versions) != 2 {
		t.Fatalf("ReadShard = %+v, %v", s, err)
	}
	if !s.Sources[0].Versions[0].Compatibility.Compatible() || s.Sources[0].Versions[1].Compatibility.Compatible() {
		t.Fatal("platform/v1 is compatible, platform/v2 is not")
	}
	m, _, err := registry.ReadManifest(strings.NewReader(validManifest), "")
	if err != nil || !m.Matches("acme", "hello", "1.0.0") {
		t.Fatalf("ReadManifest = %+v, %v", m, err)
	}
}

// edit decodes doc, applies f to its generic form and encodes it again.
func edit(t *testing.T, doc string, f func(map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func firstVersion(m map[string]any) map[string]any {
	return m["sources"].([]any)[0].(map[string]any)["versions"].([]any)[0].(map[string]any)
}

func TestTheReadersRefuseWhatTheContractDoesNot(t *testing.T) {
	padded := func(doc string, size int64) string {
		return doc[:len(doc)-1] + strings.Repeat(" ", int(size)) + "}"
	}
	cases := map[string]struct {
		read func(string) error
		doc  string
		code registry.Code
	}{
		"an index over 1 MiB":            {readIndex, padded(validIndex, registry.MaxIndexBytes), registry.CodeTooLarge},
		"a shard over 4 MiB":             {readShard, padded(validShard, registry.MaxShardBytes), registry.CodeTooLarge},
		"a manifest over 64 KiB":         {readManifest, padded(validManifest, registry.MaxManifestBytes), registry.CodeTooLarge},
		"an unknown field":               {readIndex, edit(t, validIndex, func(m map[string]any) { m["extra"] = 1 }), registry.CodeInvalidDocument},
		"a duplicate key":                {readIndex, strings.Replace(validIndex, `"serial":7`, `"serial":7,"serial":9`, 1), registry.CodeInvalidDocument},
		"data after the document":        {readIndex, validIndex + `{}`, registry.CodeInvalidDocument},
		"not JSON":                       {readIndex, `serial: 7`, registry.CodeInvalidDocument},
		"another contract version":       {readIndex, strings.Replace(validIndex, "registry.platform.dev/v1", "registry.platform.dev/v2", 1), registry.CodeUnsupportedVersion},
		"another kind":                   {readIndex, strings.Replace(validIndex, `"Index"`, `"Shard"`, 1), registry.CodeUnsupportedVersion},
		"a serial below 1":               {readIndex, strings.Replace(validIndex, `"serial":7`, `"serial":0`, 1), registry.CodeInvalidDocument},
		"a digest not in canonical form": {readIndex, strings.Replace(validIndex, "sha256:aaaa", "sha256:AAAA", 1), registry.CodeInvalidDocument},
		"a shard location with a query":  {readIndex, strings.Replace(validIndex, "shards/acme.json", "shards/acme.json?x", 1), registry.CodeInvalidDocument},
		"two shards of one name": {readIndex, edit(t, validIndex, func(m map[string]any) {
			m["shards"] = append(m["shards"].([]any), m["shards"].([]any)[0])
		}), registry.CodeInvalidDocument},
		"an unknown publisher status":       {readShard, strings.Replace(validShard, `"Verified"`, `"Trusted"`, 1), registry.CodeInvalidDocument},
		"a Source of an unlisted publisher": {readShard, strings.Replace(validShard, `{"publisher":"acme","name":"hello"`, `{"publisher":"other","name":"hello"`, 1), registry.CodeInvalidDocument},
		"a version twice":                   {readShard, strings.Replace(validShard, "2024-06-01.build+7", "1.0.0", 1), registry.CodeInvalidDocument},
		"a version with a slash":            {readShard, strings.Replace(validShard, "2024-06-01.build+7", "2024/06", 1), registry.CodeInvalidDocument},
		"a version over 128 characters":     {readShard, strings.Replace(validShard, "2024-06-01.build+7", strings.Repeat("v", 129), 1), registry.CodeInvalidDocument},
		"a version without compatibility": {readShard, edit(t, validShard, func(m map[string]any) {
			firstVersion(m)["compatibility"] = map[string]any{"packApiVersions": []any{}}
		}), registry.CodeInvalidDocument},
		"a shard that is not the indexed one":        {readShardDigest(digestA), validShard, registry.CodeDigestMismatch},
		"a manifest without a Pack size":             {readManifest, strings.Replace(validManifest, `"size":1234`, `"size":0`, 1), registry.CodeInvalidDocument},
		"a manifest over the archive limit":          {readManifest, strings.Replace(validManifest, `"size":1234`, `"size":999999999`, 1), registry.CodeInvalidDocument},
		"a manifest with a percent-encoded location": {readManifest, strings.Replace(validManifest, "../../../packs", "%2e%2e/packs", 1), registry.CodeInvalidDocument},
		"a manifest that is not the shard's":         {readManifestDigest(digestA), validManifest, registry.CodeDigestMismatch},
		"a null document":                            {readManifest, `null`, registry.CodeUnsupportedVersion},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.read(tc.doc)
			if got := registry.CodeOf(err); got != tc.code {
				t.Fatalf("code %q (%v), want %q", got, err, tc.code)
			}
		})
	}
}

// TestReadersNeverReadPastTheirLimit: an endless body costs at most the limit plus one byte.
func TestReadersNeverReadPastTheirLimit(t *testing.T) {
	r := &countingZeros{}
	_, _, err := registry.ReadManifest(r, "")
	if registry.CodeOf(err) != registry.CodeTooLarge {
		t.Fatalf("err = %v", err)
	}
	if r.n > registry.MaxManifestBytes+1 {
		t.Fatalf("read %d bytes of a %d-byte limit", r.n, registry.MaxManifestBytes)
	}
}

type countingZeros struct{ n int64 }

func (c *countingZeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	c.n += int64(len(p))
	return len(p), nil
}

func readIndex(doc string) error {
	_, _, err := registry.ReadIndex(strings.NewReader(doc))
	return err
}

func readShard(doc string) error {
	_, _, err := registry.ReadShard(strings.NewReader(doc), "")
	return err
}

func readShardDigest(want string) func(string) error {
	return func(doc string) error {
		_, _, err := registry.ReadShard(strings.NewReader(doc), want)
		return err
	}
}

func readManifest(doc string) error {
	_, _, err := registry.ReadManifest(strings.NewReader(doc), "")
	return err
}

func readManifestDigest(want string) func(string) error {
	return func(doc string) error {
		_, _, err := registry.ReadManifest(strings.NewReader(doc), want)
		return err
	}
}
