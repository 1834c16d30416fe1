package e2e

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestInvalidAgentsAreRefusedNamingTheProblem(t *testing.T) {
	s := shared(t)
	bothProfileReferences := func(obj *unstructured.Unstructured) {
		set(t, obj, "abc123", "definition", "modelProfile", "resourceId")
	}
	unknownField := func(obj *unstructured.Unstructured) {
		set(t, obj, "blue", "definition", "colour")
	}
	cases := map[string]struct {
		name      string
		namespace string
		edit      func(*unstructured.Unstructured)
		applyArgs []string
		want      []string
	}{
		"a model profile with both name and resourceId names definition.modelProfile (client-side apply)": {
			name:      "both-references",
			edit:      bothProfileReferences,
			applyArgs: []string{"apply"},
			want:      []string{"definition.modelProfile", "modelProfile names exactly one of name and resourceId"},
		},
		"a model profile with both name and resourceId names definition.modelProfile (server-side apply)": {
			name:      "both-references-ssa",
			edit:      bothProfileReferences,
			applyArgs: []string{"apply", "--server-side"},
			want:      []string{"definition.modelProfile", "modelProfile names exactly one of name and resourceId"},
		},
		"an unknown field under strict validation names the field (client-side apply)": {
			name:      "unknown-field",
			edit:      unknownField,
			applyArgs: []string{"apply", "--validate=strict"},
			want:      []string{"definition.colour"},
		},
		"an unknown field under strict validation names the field (server-side apply)": {
			name:      "unknown-field-ssa",
			edit:      unknownField,
			applyArgs: []string{"apply", "--server-side", "--validate=strict"},
			want:      []string{"definition.colour"},
		},
		"an agent in a namespace that does not exist is refused": {
			name:      "homeless",
			namespace: "no-such-namespace",
			applyArgs: []string{"apply"},
			want:      []string{"(NotFound)", `namespaces "no-such-namespace" not found`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			agent := sampleAgent(t, tc.name, tc.namespace)
			if tc.edit != nil {
				tc.edit(agent)
			}
			r := s.kubectl(append(tc.applyArgs, "-f", writeManifest(t, agent))...)
			g.Expect(r.ExitCode).NotTo(Equal(0), r.String())
			for _, want := range tc.want {
				g.Expect(r.Stderr).To(ContainSubstring(want), r.String())
			}

			namespace := tc.namespace
			if namespace == "" {
				namespace = "default"
			}
			r = s.kubectl("get", "agent", tc.name, "--namespace", namespace)
			g.Expect(r.ExitCode).NotTo(Equal(0), "a refused agent was stored: %s", r)
			g.Expect(r.Stderr).To(ContainSubstring("(NotFound)"), r.String())
		})
	}
}
