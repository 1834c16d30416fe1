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

// TestInvalidTriggersAreRefusedNamingTheFieldAndNothingIsScheduled: what the CRD schema cannot
// check about a Trigger (the zone, the expression, the instant, the target Flow) is refused by
// admission with the field path, as the schema's own checks are.
func TestInvalidTriggersAreRefusedNamingTheFieldAndNothingIsScheduled(t *testing.T) {
	s := shared(t)
	s.mustKubectl(t, "apply", "-n", "default", "-f", "../../config/samples/platform_v1_flow.yaml")
	manifest := func(name, schedule, extra, flow string) string {
		return "apiVersion: platform.dev/v1\nkind: Trigger\nmetadata: {name: " + name + ", namespace: default}\ndefinition:\n" +
			"  source: {kind: schedule, schedule: " + schedule + "}\n" +
			"  target: {kind: flow, flow: {name: " + flow + "}, input: {request: hello}}\n" + extra
	}
	cases := map[string]struct {
		name, schedule, extra, flow string
		want                        []string
	}{
		"an unknown time zone": {name: "bad-zone", schedule: `{type: cron, expression: "0 7 * * *", timeZone: Europe/Pariss}`,
			want: []string{"definition.source.schedule.timeZone", "not an IANA time zone name"}},
		"an invalid cron expression": {name: "bad-cron", schedule: `{type: cron, expression: "0 25 * * *", timeZone: UTC}`,
			want: []string{"definition.source.schedule.expression"}},
		"an interval that is no duration": {name: "bad-interval", schedule: `{type: interval, expression: "5m", timeZone: UTC}`,
			want: []string{"definition.source.schedule.expression", "an interval schedule is a duration"}},
		"a once instant in the past": {name: "bad-once", schedule: `{type: once, expression: "2020-01-31T09:00:00", timeZone: UTC}`,
			want: []string{"definition.source.schedule.expression", "the instant lies in the past"}},
		"an unknown misfire policy": {name: "bad-policy", schedule: `{type: cron, expression: "@daily", timeZone: UTC}`, extra: "  misfirePolicy: later\n",
			want: []string{"definition.misfirePolicy", "Unsupported value"}},
		"a target Flow that does not exist": {name: "bad-target", schedule: `{type: cron, expression: "@daily", timeZone: UTC}`, flow: "no-such-flow",
			want: []string{"definition.target.flow.name", "Not found"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			flow := tc.flow
			if flow == "" {
				flow = "support-triage"
			}
			r := s.kubectlStdin(manifest(tc.name, tc.schedule, tc.extra, flow), "apply", "-f", "-")
			g.Expect(r.ExitCode).NotTo(Equal(0), r.String())
			for _, want := range tc.want {
				g.Expect(r.Stderr).To(ContainSubstring(want), r.String())
			}
			r = s.kubectl("get", "trigger", tc.name, "--namespace", "default")
			g.Expect(r.Stderr).To(ContainSubstring("(NotFound)"), "a refused Trigger was stored: %s", r)
		})
	}
}
