package registry_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"platform.dev/platform/internal/registry"
)

// The readers never panic, never accept more than their limit, and what they accept reads the
// same again after encoding (one reading of the bytes).

func FuzzReadIndex(f *testing.F) {
	for _, seed := range []string{validIndex, `{}`, `null`, `[]`, `{"apiVersion":"registry.platform.dev/v1","kind":"Index","serial":1,"shards":[]}`,
		`{"apiVersion":"registry.platform.dev/v1","kind":"Index","serial":1,"serial":2,"shards":null}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		idx, d, err := registry.ReadIndex(bytes.NewReader(b))
		if err != nil {
			if registry.CodeOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if int64(len(b)) > registry.MaxIndexBytes || d != registry.Digest(b) {
			t.Fatalf("accepted %d bytes with digest %s", len(b), d)
		}
		again, _, err := registry.ReadIndex(bytes.NewReader(mustJSON(t, idx)))
		if err != nil || !reflect.DeepEqual(normalize(t, idx), normalize(t, again)) {
			t.Fatalf("the re-encoded index reads differently: %v", err)
		}
	})
}

func FuzzReadShard(f *testing.F) {
	for _, seed := range []string{validShard, `{}`, `{"apiVersion":"registry.platform.dev/v1","kind":"Shard","name":"a","publishers":[],"sources":[]}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, d, err := registry.ReadShard(bytes.NewReader(b), "")
		if err != nil {
			if registry.CodeOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if int64(len(b)) > registry.MaxShardBytes || d != registry.Digest(b) {
			t.Fatalf("accepted %d bytes with digest %s", len(b), d)
		}
		again, _, err := registry.ReadShard(bytes.NewReader(mustJSON(t, s)), "")
		if err != nil || !reflect.DeepEqual(normalize(t, s), normalize(t, again)) {
			t.Fatalf("the re-encoded shard reads differently: %v", err)
		}
	})
}

func FuzzReadManifest(f *testing.F) {
	for _, seed := range []string{validManifest, `{}`, `{"pack":{}}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, d, err := registry.ReadManifest(bytes.NewReader(b), "")
		if err != nil {
			if registry.CodeOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if int64(len(b)) > registry.MaxManifestBytes || d != registry.Digest(b) {
			t.Fatalf("accepted %d bytes with digest %s", len(b), d)
		}
		again, _, err := registry.ReadManifest(bytes.NewReader(mustJSON(t, m)), "")
		if err != nil || !reflect.DeepEqual(m, again) {
			t.Fatalf("the re-encoded manifest reads differently: %v", err)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// normalize compares documents as their JSON (nil and empty lists alike).
func normalize(t *testing.T, v any) string { return string(mustJSON(t, v)) }
