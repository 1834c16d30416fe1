package manifest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func TestNormalizeAcceptsBothSpellings(t *testing.T) {
	cases := map[string]struct {
		in, want map[string]any
		errs     int
	}{
		"the spec's spelling becomes the kube spelling": {
			in:   map[string]any{"apiVersion": "platform/v1", "kind": "Agent", "metadata": map[string]any{"name": "a", "tags": map[string]any{"team": "x"}}},
			want: map[string]any{"apiVersion": "platform.dev/v1", "kind": "Agent", "metadata": map[string]any{"name": "a", "labels": map[string]any{"team": "x"}}},
		},
		"the kube spelling is kept": {
			in:   map[string]any{"apiVersion": "platform.dev/v1", "kind": "Agent", "metadata": map[string]any{"name": "a", "labels": map[string]any{"team": "x"}}},
			want: map[string]any{"apiVersion": "platform.dev/v1", "kind": "Agent", "metadata": map[string]any{"name": "a", "labels": map[string]any{"team": "x"}}},
		},
		"tags and labels together are refused": {
			in:   map[string]any{"apiVersion": "platform/v1", "metadata": map[string]any{"tags": map[string]any{}, "labels": map[string]any{}}},
			errs: 1,
		},
		"another apiVersion is refused": {
			in:   map[string]any{"apiVersion": "apps/v1", "metadata": map[string]any{}},
			errs: 1,
		},
		"a missing apiVersion is refused": {
			in:   map[string]any{"metadata": map[string]any{}},
			errs: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := Normalize(tc.in)
			if len(errs) != tc.errs {
				t.Fatalf("errors = %v, want %d", errs, tc.errs)
			}
			if tc.errs == 0 {
				if diff := cmp.Diff(tc.want, tc.in); diff != "" {
					t.Fatalf("(-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestSpecSpellingRoundTrips(t *testing.T) {
	obj := map[string]any{"apiVersion": "platform/v1", "metadata": map[string]any{"tags": map[string]any{"a": "b"}}}
	original := map[string]any{"apiVersion": "platform/v1", "metadata": map[string]any{"tags": map[string]any{"a": "b"}}}
	if errs := Normalize(obj); len(errs) > 0 {
		t.Fatal(errs)
	}
	ToSpecSpelling(obj)
	if diff := cmp.Diff(original, obj); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// FuzzNormalize: whatever a manifest holds, normalization answers with field errors, never a
// panic, and a normalized manifest is in the kube spelling.
func FuzzNormalize(f *testing.F) {
	f.Add([]byte("apiVersion: platform/v1\nkind: Agent\nmetadata:\n  name: a\n  tags: {a: b}\n"))
	f.Add([]byte("apiVersion: platform.dev/v1\nmetadata: 3\n"))
	f.Add([]byte("metadata:\n  tags: x\n  labels: y\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		obj := map[string]any{}
		if err := yaml.Unmarshal(data, &obj); err != nil {
			return
		}
		if errs := Normalize(obj); len(errs) == 0 && obj["apiVersion"] != KubeAPIVersion {
			t.Fatalf("normalized without errors but apiVersion is %v", obj["apiVersion"])
		}
	})
}
