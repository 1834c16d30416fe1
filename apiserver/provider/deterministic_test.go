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
		"no directive responds in prose about the message": {
			instructions: "Be brief.",
			want:         provider.Action{Type: provider.ActionRespond, Text: "Here is an answer to \u201chello\u201d, written offline from your request alone."},
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
			got.ModelProvider, got.Model, got.Usage = "", "", nil
			g.Expect(got).To(Equal(tc.want))
			again, _ := provider.DeterministicProvider{}.Invoke(context.Background(), req)
			again.ModelProvider, again.Model, again.Usage = "", "", nil
			g.Expect(again).To(Equal(got), "a pure function of instructions and input")
		})
	}
}

// answered is a transcript in which a person answered the agent's question.
func answered(action, prompt, answer string) []provider.Turn {
	return []provider.Turn{{Calls: []provider.ToolCall{{ID: "question", Name: action, Arguments: `{"prompt":"` + prompt + `"}`, Result: answer}}}}
}

func TestTheDeterministicProviderAnswersAQuestionItsAgentAskedOnceItIsAnswered(t *testing.T) {
	cases := map[string]struct {
		instructions string
		transcript   []provider.Turn
		want         provider.Action
	}{
		"the question is asked first": {
			instructions: "@requestChoice Style?\n@option formal\n@option friendly\n@respond Done in {{input}}",
			want:         provider.Action{Type: provider.ActionRequestChoice, Prompt: "Style?", Options: []provider.Option{{Value: "formal"}, {Value: "friendly"}}},
		},
		"answered, the next action directive answers": {
			instructions: "@requestChoice Style?\n@option formal\n@respond Done: {{input}}",
			transcript:   answered("requestChoice", "Style?", "formal"),
			want:         provider.Action{Type: provider.ActionRespond, Text: "Done: hello"},
		},
		"answered, with no directive after it, the default answer takes the choice": {
			instructions: "@requestChoice Level?\n@option brief\n@option detailed",
			transcript:   answered("requestChoice", "Level?", "brief"),
			want: provider.Action{Type: provider.ActionRespond, Text: "## Hello: report outline\n\nThe report in 3 sections (detail level: brief):\n\n" +
				"### Overview\n\nWhat hello covers and why it matters now.\n\n### Key figures\n\nThe main numbers behind hello.\n\n" +
				"### Recommendations\n\nWhat to do next, in order of impact."},
		},
		"a second question waits for its own answer": {
			instructions: "@requestChoice Level?\n@option brief\n@requestConfirmation Sure?\n@respond ok",
			transcript:   answered("requestChoice", "Level?", "brief"),
			want:         provider.Action{Type: provider.ActionRequestConfirmation, Prompt: "Sure?"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := provider.DeterministicProvider{}.Invoke(context.Background(), provider.Request{Attempt: 1,
				Agent: provider.Agent{Name: "a", Instructions: tc.instructions}, Message: "hello", Transcript: tc.transcript})
			g.Expect(err).NotTo(HaveOccurred())
			got.ModelProvider, got.Model, got.Usage = "", "", nil
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

// The offline model's answers are read by people: prose shaped by the choices, naming the
// subject, never a provider, a digest or JSON.
func TestTheDeterministicProviderWritesReadableProseShapedByTheChoices(t *testing.T) {
	report := "You outline reports.\n@report"
	note := "@requestChoice Which style?\n@option formal\n@option friendly\n@option concise\n@note"
	cases := map[string]struct {
		instructions, message string
		transcript            []provider.Turn
		contains              []string
		lacks                 []string
	}{
		"a detailed report has sections with bullet points": {
			instructions: report, message: "Subject: Monthly cloud costs\nDetail: detailed",
			contains: []string{"Monthly cloud costs", "detail level: detailed", "### Risks", "\n- Open issues and their owners"},
		},
		"a brief report has sections without points": {
			instructions: report, message: "Subject: Monthly cloud costs\nDetail: brief",
			contains: []string{"3 sections (detail level: brief)", "### Overview"}, lacks: []string{"\n- ", "### Risks"},
		},
		"a summary is a short numbered outline": {
			instructions: report, message: "Subject: Monthly cloud costs\nFormat: summary\nDetail: standard",
			contains: []string{"Monthly cloud costs: summary outline", "1. **Overview**", "4. **Recommendations**"}, lacks: []string{"###", "|"},
		},
		"a table is a Markdown table": {
			instructions: report, message: "Subject: Monthly cloud costs\nFormat: table\nDetail: standard",
			contains: []string{"| Section | What it covers |\n|---|---|\n| Overview |"}, lacks: []string{"Key points"},
		},
		"a detailed table adds the key points": {
			instructions: report, message: "Subject: Monthly cloud costs\nFormat: table\nDetail: detailed",
			contains: []string{"| Section | What it covers | Key points |", "| Risks |"},
		},
		"a narrative is paragraphs": {
			instructions: report, message: "Subject: Monthly cloud costs\nFormat: narrative\nDetail: brief",
			contains: []string{"tells the story of Monthly cloud costs in 3 parts", "**Overview.** It explains"}, lacks: []string{"\n- "},
		},
		"a formal note": {
			instructions: note, message: "A note to the team", transcript: answered("requestChoice", "Which style?", "formal"),
			contains: []string{"Dear colleague", "regarding A note to the team", "Kind regards"},
		},
		"a friendly note": {
			instructions: note, message: "A note to the team", transcript: answered("requestChoice", "Which style?", "friendly"),
			contains: []string{"Hi! Happy to help with A note to the team"},
		},
		"a concise note": {
			instructions: note, message: "A note to the team", transcript: answered("requestChoice", "Which style?", "concise"),
			contains: []string{"**A note to the team**\n\n- Scope"},
		},
		"{{input}} of a WorkItem's JSON is what it asks, not its JSON": {
			instructions: "@respond Here is a quick answer to \"{{input}}\".",
			message:      `{"instruction":"Say hello","title":"A greeting","type":"note"}`,
			contains:     []string{`Here is a quick answer to "Say hello".`},
		},
		"{{input}} of a message is the message as written": {
			instructions: "@respond Here is a quick answer to \"{{input}}\".",
			message:      "What is a workspace?",
			contains:     []string{`Here is a quick answer to "What is a workspace?".`},
		},
		"a WorkItem's JSON is read for its title and instruction": {
			instructions: "@requestChoice Which level of detail?\n@option brief\n@option detailed\n@report",
			message:      `{"instruction":"Prepare it","title":"Q3","type":"report"}`,
			transcript:   answered("requestChoice", "Which level of detail?", "detailed"),
			contains:     []string{"## Q3: report outline", "5 sections (detail level: detailed)", "- Scope and period covered"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			req := provider.Request{Attempt: 1, Agent: provider.Agent{Name: "a", Instructions: tc.instructions}, Message: tc.message,
				Transcript: tc.transcript}
			got, err := provider.DeterministicProvider{}.Invoke(context.Background(), req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Type).To(Equal(provider.ActionRespond))
			for _, c := range tc.contains {
				g.Expect(got.Text).To(ContainSubstring(c))
			}
			for _, l := range tc.lacks {
				g.Expect(got.Text).NotTo(ContainSubstring(l))
			}
			g.Expect(got.Text).NotTo(Or(ContainSubstring("Deterministic"), MatchRegexp(`[0-9a-f]{12}`), ContainSubstring(`{"`)))
			again, _ := provider.DeterministicProvider{}.Invoke(context.Background(), req)
			g.Expect(again.Text).To(Equal(got.Text), "the same input gives the same answer")
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
