package provider_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/provider/openaitest"
)

func TestBuiltInActionsTakeTheirArgumentsOrSayWhatIsWrongWithThem(t *testing.T) {
	cases := map[string]struct {
		name, arguments string
		want            provider.Action
		wantErr         string
	}{
		"a choice with options suspends on them": {
			name: "requestChoice", arguments: `{"prompt":" Level? ","options":[{"value":"a","label":"A"},{"value":"b"}]}`,
			want: provider.Action{Type: provider.ActionRequestChoice, Prompt: "Level?", Options: []provider.Option{{Value: "a", Label: "A"}, {Value: "b"}}},
		},
		"a choice needs options":               {name: "requestChoice", arguments: `{"prompt":"Level?"}`, wantErr: "requestChoice needs 1 to 20 options"},
		"options are distinct":                 {name: "requestChoice", arguments: `{"prompt":"Level?","options":[{"value":"a"},{"value":"a"}]}`, wantErr: "a distinct value"},
		"a confirmation needs a prompt":        {name: "requestConfirmation", arguments: `{"prompt":"  "}`, wantErr: "requestConfirmation needs a prompt of 1 to 4096 bytes"},
		"an input asks its prompt":             {name: "requestInput", arguments: `{"prompt":"Name?"}`, want: provider.Action{Type: provider.ActionRequestInput, Prompt: "Name?"}},
		"a task needs a title":                 {name: "createTask", arguments: `{"text":"x"}`, wantErr: "createTask needs a title"},
		"a result shows its text":              {name: "showResult", arguments: `{"text":"Done"}`, want: provider.Action{Type: provider.ActionShowResult, Text: "Done"}},
		"arguments that are not JSON are told": {name: "showResult", arguments: `{"text":`, wantErr: "not a JSON object"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := provider.BuiltinAction(provider.ToolCall{Name: tc.name, Arguments: tc.arguments})
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestTheOpenAIProviderOffersFunctionsAndSendsEarlierToolCallsWithTheirResults(t *testing.T) {
	g := NewWithT(t)
	srv := openaitest.New()
	defer srv.Close()
	srv.Answer = func(openaitest.ChatRequest) openaitest.Answer {
		return openaitest.Answer{Content: "looking", ToolCalls: []openaitest.ToolCall{openaitest.Call("", "kb-search", `{"q":"x"}`)}}
	}
	c := provider.NewOpenAIClient(provider.Endpoint{Provider: "local", Type: platformv1.OpenAICompatibleProvider, BaseURL: srv.BaseURL()})
	act, err := c.Converse(context.Background(), provider.Generation{Model: "gpt-test"}, provider.Conversation{
		Instructions: "Search.", Message: "find x",
		Tools: []provider.ToolSpec{{Name: "kb-search", Description: "Searches.", Parameters: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`)}},
		Transcript: []provider.Turn{{Text: "first", Calls: []provider.ToolCall{
			{ID: "c1", Name: "kb-search", Arguments: `{"q":"a"}`, Result: "nothing"},
			{ID: "c2", Name: "kb-gone", Arguments: `{}`, Result: "not available", IsError: true}}}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(act).To(Equal(provider.Action{Type: provider.ActionCallTools, Text: "looking", ModelProvider: "local", Model: "gpt-test",
		ToolCalls: []provider.ToolCall{{ID: "call_1", Name: "kb-search", Arguments: `{"q":"x"}`}},
		Usage:     &provider.Usage{InputTokens: 1, OutputTokens: 1}}), "a call without an id gets one, and the usage the endpoint reported")
	req := srv.Chats()[0]
	g.Expect(req.Functions()).To(Equal([]string{"kb-search"}))
	g.Expect(string(req.Tools[0].Function.Parameters)).To(MatchJSON(`{"type":"object","properties":{"q":{"type":"string"}}}`))
	g.Expect(req.Messages[2].Role).To(Equal("assistant"))
	g.Expect(req.Messages[2].Content).To(Equal("first"))
	g.Expect(req.Messages[2].ToolCalls).To(HaveLen(2))
	g.Expect(req.ToolResults()).To(Equal(map[string]string{"c1": "nothing", "c2": "Error: not available"}))
}

func TestTheDeterministicProviderCallsToolsBeforeItsActionAndReportsTheirResults(t *testing.T) {
	g := NewWithT(t)
	agent := provider.Agent{Name: "a", Instructions: "@callTool kb-search {\"q\":\"{{input}}\"}\n@callTool kb-time\n@respond"}
	first, err := provider.DeterministicProvider{}.Invoke(context.Background(), provider.Request{Attempt: 1, Agent: agent, Message: "x"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Type).To(Equal(provider.ActionCallTools))
	g.Expect(first.ToolCalls).To(Equal([]provider.ToolCall{{ID: "call_1", Name: "kb-search", Arguments: `{"q":"x"}`},
		{ID: "call_2", Name: "kb-time", Arguments: `{}`}}))

	agent.Instructions = "@callTool kb-search {}\n@showResult"
	then, err := provider.DeterministicProvider{}.Invoke(context.Background(), provider.Request{Attempt: 1, Agent: agent, Message: "x",
		Transcript: []provider.Turn{{Calls: []provider.ToolCall{{ID: "call_1", Name: "kb-search", Result: "found"}}}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(then.Type).To(Equal(provider.ActionShowResult))
	g.Expect(then.Text).To(Equal("Here is an answer to \u201cx\u201d, written offline from your request alone.\nkb-search: found"))
}

// A model writes the arguments of the built-in actions: whatever it writes, an action taken
// stays within the bounds a person is shown.
func FuzzBuiltInActionArguments(f *testing.F) {
	for _, seed := range []struct{ name, args string }{
		{"requestChoice", `{"prompt":"Level?","options":[{"value":"a","label":"A"}]}`},
		{"requestConfirmation", `{"prompt":"Sure?"}`},
		{"createTask", `{"title":"T","text":"x"}`},
		{"showResult", `{"text":""}`},
		{"requestInput", `{"prompt":null}`},
	} {
		f.Add(seed.name, seed.args)
	}
	f.Fuzz(func(t *testing.T, name, args string) {
		act, err := provider.BuiltinAction(provider.ToolCall{Name: name, Arguments: args})
		if err != nil {
			return
		}
		switch {
		case !provider.IsBuiltin(act.Type):
			t.Fatalf("action %q from %q", act.Type, name)
		case act.Type == provider.ActionRequestChoice && (len(act.Options) == 0 || len(act.Options) > 20):
			t.Fatalf("%d options", len(act.Options))
		case len(act.Prompt) > 4096 || len(act.Title) > 256 || len(act.Text) > 64<<10:
			t.Fatalf("unbounded action %+v", act)
		}
	})
}
