package provider

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// DeterministicModel is the model the Deterministic provider answers as.
const DeterministicModel = "deterministic"

// DeterministicProvider answers without a model: its answer is a pure function of the agent's
// instructions, the message and the attempt, so flows run offline and tests are repeatable.
//
// Directive lines in the instructions choose the action (the first action directive wins; other
// lines are ordinary instructions):
//
//	@respond [text]               respond (the default when no directive is present)
//	@showResult [text]            showResult
//	@createTask <title>           createTask
//	@showError <message>          showError: the step fails with the message
//	@requestInput <prompt>        requestInput: the run waits for text
//	@requestConfirmation <prompt> requestConfirmation: the run waits for yes or no
//	@requestChoice <prompt>       requestChoice, with one line per option:
//	@option <value> [label]
//	@transientFailures <n>        the first n attempts fail as a model endpoint 5xx would
//	@latencyMs <n>                the answer takes n milliseconds, like a model call (at most 60000);
//	                              the step's start is committed before the wait, as before a call
//	@callTool <function> [json]   before its action, the agent calls the tool offered as function
//	                              with the JSON arguments ({} when omitted); several lines make
//	                              several calls of one answer
//	@deliverable <name> [type]    the answer declares a deliverable file named name whose content
//	                              is the answer's text (media type text/markdown by default)
//	@text <text>                  the text of a respond, showResult or createTask whose own line
//	                              gives none
//	@report                       respond with a report outline on the request's subject, in the
//	                              format and detail level chosen (see Compose)
//	@note                         respond with a note on the request's subject in the chosen style
//
// A question (requestInput, requestConfirmation, requestChoice) that the Transcript shows answered
// is not asked again: the next action directive after it answers, else the default answer. So an
// agent that asks, then answers, reads as the conversation it is.
//
// In texts, titles and prompts, {{input}} stands for the message (a WorkItem's instruction, not its
// JSON) and {{subject}} for its subject.
// Without a text, respond, showResult and createTask answer in prose composed from the request and
// the choices made (Compose), followed by one line per tool call of the step: "<function>:
// <result>". The answer never names the provider or shows a digest: people read it.
type DeterministicProvider struct{}

// Name is Deterministic.
func (DeterministicProvider) Name() string { return Deterministic }

// Invoke answers per the directives of req.Agent.Instructions.
func (DeterministicProvider) Invoke(ctx context.Context, req Request) (Action, error) {
	if err := ctx.Err(); err != nil {
		return Action{}, err
	}
	req.Message = strings.TrimSpace(req.Message)
	choices := choicesOf(req)
	subject := choices.Subject
	var (
		act          *Action
		text         string
		options      []Option
		calls        []ToolCall
		deliverables []Deliverable
		transient    int
		latency      time.Duration
		// collecting says whether an @option line belongs to the question asked: not to one
		// answered already, nor to one after the chosen action.
		collecting = true
	)
	for _, line := range strings.Split(req.Agent.Instructions, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "@") {
			continue
		}
		name, arg, _ := strings.Cut(line[1:], " ")
		arg = strings.NewReplacer("{{input}}", asked(req.Message), "{{subject}}", subject).Replace(strings.TrimSpace(arg))
		switch name {
		case "option":
			value, label, _ := strings.Cut(arg, " ")
			if value != "" && collecting {
				options = append(options, Option{Value: value, Label: strings.TrimSpace(label)})
			}
		case "text":
			if text == "" {
				text = arg
			}
		case "callTool":
			name, args, _ := strings.Cut(arg, " ")
			if args = strings.TrimSpace(args); args == "" {
				args = "{}"
			}
			if name != "" {
				calls = append(calls, ToolCall{ID: fmt.Sprintf("call_%d", len(calls)+1), Name: name, Arguments: args})
			}
		case "deliverable":
			name, mediaType, _ := strings.Cut(arg, " ")
			if mediaType = strings.TrimSpace(mediaType); mediaType == "" {
				mediaType = "text/markdown"
			}
			if name != "" {
				deliverables = append(deliverables, Deliverable{Name: name, MediaType: mediaType})
			}
		case "transientFailures":
			transient, _ = strconv.Atoi(arg)
		case "latencyMs":
			n, _ := strconv.Atoi(arg)
			latency = time.Duration(min(max(n, 0), 60000)) * time.Millisecond
		case "report", "note":
			collecting = false
			if act == nil {
				act = &Action{Type: ActionRespond, Text: Compose(name, choices)}
			}
		case ActionRespond, ActionShowResult, ActionShowError:
			collecting = false
			if act == nil {
				act = &Action{Type: name, Text: arg}
			}
		case ActionCreateTask:
			collecting = false
			if act == nil {
				act = &Action{Type: name, Title: arg}
			}
		case ActionRequestInput, ActionRequestConfirmation, ActionRequestChoice:
			collecting = act == nil && !answered(req.Transcript, name, arg)
			if collecting {
				act = &Action{Type: name, Prompt: arg}
				options = nil
			}
		}
	}
	if latency > 0 {
		// A declared latency stands for a model call: the run shows the step under way, as it
		// would while a model answers.
		if err := BeforeOutsideCall(ctx); err != nil {
			return Action{}, err
		}
		select {
		case <-ctx.Done():
			return Action{}, ctx.Err()
		case <-time.After(latency):
		}
	}
	if req.Attempt <= transient {
		return Action{}, &TransientError{Err: fmt.Errorf("deterministic provider: simulated transient failure of attempt %d", req.Attempt)}
	}
	if len(calls) > 0 && len(req.Transcript) == 0 {
		act := Action{Type: ActionCallTools, ToolCalls: calls, ModelProvider: Deterministic, Model: DeterministicModel}
		act.Usage = deterministicUsage(req, act)
		return act, nil
	}
	if act == nil {
		act = &Action{Type: ActionRespond}
	}
	switch act.Type {
	case ActionRespond, ActionShowResult, ActionCreateTask:
		if act.Text == "" {
			act.Text = text
		}
		if act.Text == "" {
			act.Text = Compose("", choices)
			for _, turn := range req.Transcript {
				for _, c := range turn.Calls {
					if IsBuiltin(c.Name) {
						continue // an answered question, not a tool's result
					}
					result := c.Result
					if c.IsError {
						result = "Error: " + result
					}
					act.Text += "\n" + c.Name + ": " + result
				}
			}
		}
		for _, d := range deliverables {
			d.Content = act.Text
			act.Deliverables = append(act.Deliverables, d)
		}
	case ActionRequestChoice:
		if len(options) == 0 {
			return Action{}, fmt.Errorf("deterministic provider: agent %q requests a choice without @option lines", req.Agent.Name)
		}
		act.Options = options
	}
	act.ModelProvider, act.Model = Deterministic, DeterministicModel
	act.Usage = deterministicUsage(req, *act)
	return *act, nil
}

// DeterministicTokens counts text as the Deterministic model does: a token per four characters
// (Unicode code points), rounded up, the usual rule of thumb for English text.
func DeterministicTokens(texts ...string) int64 {
	n := 0
	for _, t := range texts {
		n += utf8.RuneCountInString(t)
	}
	return int64((n + 3) / 4)
}

// deterministicUsage is what the Deterministic model reports for an answer: its input is what it
// read (the instructions, the message and the step's earlier answers and results), its output
// what it wrote (text, prompt, title, options, tool calls and their arguments).
func deterministicUsage(req Request, act Action) *Usage {
	in := []string{req.Agent.Instructions, req.Message}
	for _, turn := range req.Transcript {
		in = append(in, turn.Text)
		for _, c := range turn.Calls {
			in = append(in, c.Name, c.Arguments, c.Result)
		}
	}
	out := []string{act.Text, act.Prompt, act.Title}
	for _, o := range act.Options {
		out = append(out, o.Value, o.Label)
	}
	for _, c := range act.ToolCalls {
		out = append(out, c.Name, c.Arguments)
	}
	return &Usage{InputTokens: DeterministicTokens(in...), OutputTokens: DeterministicTokens(out...)}
}

// answered reports whether the transcript holds the answer to the question action asks with
// prompt.
func answered(transcript []Turn, action, prompt string) bool {
	for _, turn := range transcript {
		for _, c := range turn.Calls {
			if c.Name == action && promptOf(c.Arguments) == prompt {
				return true
			}
		}
	}
	return false
}
