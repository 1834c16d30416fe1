package provider_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/internal/config"
)

func TestTheDeterministicProviderChoosesItsActionFromDirectiveLines(t *testing.T) {
	cases := map[string]struct {
		instructions string
		attempt      int
		want         provider.Action
		transient    bool
	}{
		"no directive responds with a digest of instructions and message": {
			instructions: "Be brief.",
			want:         provider.Action{Type: provider.ActionRespond, Text: "Deterministic response 7e3f4f1b9c2f: hello"},
		},
		"requestChoice collects its options": {
			instructions: "@requestChoice Level for {{input}}?\n@option brief Brief\n@option detailed",
			want: provider.Action{Type: provider.ActionRequestChoice, Prompt: "Level for hello?",
				Options: []provider.Option{{Value: "brief", Label: "Brief"}, {Value: "detailed"}}},
		},
		"the first action directive wins": {
			instructions: "@requestConfirmation Sure?\n@showError never",
			want:         provider.Action{Type: provider.ActionRequestConfirmation, Prompt: "Sure?"},
		},
		"a deliverable is declared with the answer's text as its content": {
			instructions: "@showResult Report for {{input}}\n@deliverable report.md\n@deliverable report.csv text/csv",
			want: provider.Action{Type: provider.ActionShowResult, Text: "Report for hello", Deliverables: []provider.Deliverable{
				{Name: "report.md", MediaType: "text/markdown", Content: "Report for hello"},
				{Name: "report.csv", MediaType: "text/csv", Content: "Report for hello"}}},
		},
		"showError carries its message": {
			instructions: "@showError out of paper",
			want:         provider.Action{Type: provider.ActionShowError, Text: "out of paper"},
		},
		"transient failures fail the first attempts": {
			instructions: "@transientFailures 1\n@respond ok", attempt: 1, transient: true,
		},
		"transient failures end after the given attempts": {
			instructions: "@transientFailures 1\n@respond ok", attempt: 2,
			want: provider.Action{Type: provider.ActionRespond, Text: "ok"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			attempt := max(tc.attempt, 1)
			req := provider.Request{Attempt: attempt, Agent: provider.Agent{Name: "a", Instructions: tc.instructions}, Message: "hello"}
			got, err := provider.DeterministicProvider{}.Invoke(context.Background(), req)
			if tc.transient {
				g.Expect(provider.IsTransient(err)).To(BeTrue(), "%v", err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.ModelProvider).To(Equal(provider.Deterministic))
			got.ModelProvider, got.Model = "", ""
			if tc.want.Type == provider.ActionRespond && tc.want.Text != "ok" {
				g.Expect(got.Text).To(MatchRegexp(`^Deterministic response [0-9a-f]{12}: hello$`))
				again, _ := provider.DeterministicProvider{}.Invoke(context.Background(), req)
				again.ModelProvider, again.Model = "", ""
				g.Expect(again).To(Equal(got), "a pure function of instructions and input")
				return
			}
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestAIProviderSelectsTheProvider(t *testing.T) {
	g := NewWithT(t)
	p, err := provider.FromConfig(config.FromMap(config.Production, map[string]string{"AI:Provider": "Deterministic"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Name()).To(Equal(provider.Deterministic))
	p, err = provider.FromConfig(config.FromMap(config.Production, nil))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Name()).To(Equal(provider.Managed))
	_, err = provider.FromConfig(config.FromMap(config.Production, map[string]string{"AI:Provider": "Magic"}))
	g.Expect(err).To(HaveOccurred())
}
