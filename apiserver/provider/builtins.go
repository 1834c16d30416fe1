package provider

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Bounds of the arguments of the built-in actions.
const (
	maxPromptBytes  = 4096
	maxTitleBytes   = 256
	maxTextBytes    = 64 << 10
	maxOptions      = 20
	maxOptionValue  = 256
	maxOptionLabels = 256
)

// builtinTools are the functional actions a model can take as function calls, so that a real
// model asks, creates a Task or shows a result exactly as the Deterministic provider's
// directives do: a run on an OpenAI-compatible model suspends and resumes the same way.
var builtinTools = []ToolSpec{
	{Name: ActionRequestChoice, Description: "Ask the person to choose one of a few options and wait for the answer. " +
		"Use it instead of answering when the work needs the person's decision.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"prompt":{"type":"string","description":"The question shown to the person"},` +
			`"options":{"type":"array","minItems":1,"maxItems":20,"description":"The answers offered, as buttons",` +
			`"items":{"type":"object","properties":{"value":{"type":"string"},"label":{"type":"string"}},"required":["value"]}}},` +
			`"required":["prompt","options"]}`)},
	{Name: ActionRequestConfirmation, Description: "Ask the person to confirm (yes or no) and wait for the answer.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The question shown to the person"}},"required":["prompt"]}`)},
	{Name: ActionRequestInput, Description: "Ask the person for a text answer and wait for it.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The question shown to the person"}},"required":["prompt"]}`)},
	{Name: ActionCreateTask, Description: "Create a Task that tracks durable work for the person, with a short title.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"text":{"type":"string","description":"What the Task is about"}},"required":["title"]}`)},
	{Name: ActionShowResult, Description: "Show the result of the work to the person; this ends your part of the work.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
}

// BuiltinTools are the functional actions offered to every model as functions.
func BuiltinTools() []ToolSpec { return append([]ToolSpec(nil), builtinTools...) }

// IsBuiltin reports whether name is a built-in action.
func IsBuiltin(name string) bool {
	for _, t := range builtinTools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// BuiltinAction turns a model's call of a built-in action into the action. An error says what
// is wrong with the arguments, for the model to read and correct.
func BuiltinAction(call ToolCall) (Action, error) {
	var args struct {
		Prompt  string   `json:"prompt"`
		Options []Option `json:"options"`
		Title   string   `json:"title"`
		Text    string   `json:"text"`
	}
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return Action{}, fmt.Errorf("the arguments of %s are not a JSON object of its parameters", call.Name)
	}
	prompt := func() error {
		if p := strings.TrimSpace(args.Prompt); p == "" || len(p) > maxPromptBytes {
			return fmt.Errorf("%s needs a prompt of 1 to %d bytes", call.Name, maxPromptBytes)
		}
		return nil
	}
	switch call.Name {
	case ActionRequestChoice:
		if err := prompt(); err != nil {
			return Action{}, err
		}
		if len(args.Options) == 0 || len(args.Options) > maxOptions {
			return Action{}, fmt.Errorf("requestChoice needs 1 to %d options", maxOptions)
		}
		seen := map[string]bool{}
		for _, o := range args.Options {
			if o.Value == "" || len(o.Value) > maxOptionValue || len(o.Label) > maxOptionLabels || seen[o.Value] {
				return Action{}, fmt.Errorf("each option of requestChoice needs a distinct value of 1 to %d bytes and a label of at most %d",
					maxOptionValue, maxOptionLabels)
			}
			seen[o.Value] = true
		}
		return Action{Type: ActionRequestChoice, Prompt: strings.TrimSpace(args.Prompt), Options: args.Options}, nil
	case ActionRequestConfirmation, ActionRequestInput:
		if err := prompt(); err != nil {
			return Action{}, err
		}
		return Action{Type: call.Name, Prompt: strings.TrimSpace(args.Prompt)}, nil
	case ActionCreateTask:
		if t := strings.TrimSpace(args.Title); t == "" || len(t) > maxTitleBytes || len(args.Text) > maxTextBytes {
			return Action{}, fmt.Errorf("createTask needs a title of 1 to %d bytes and a text of at most %d", maxTitleBytes, maxTextBytes)
		}
		return Action{Type: ActionCreateTask, Title: strings.TrimSpace(args.Title), Text: args.Text}, nil
	case ActionShowResult:
		if len(args.Text) > maxTextBytes {
			return Action{}, fmt.Errorf("showResult takes a text of at most %d bytes", maxTextBytes)
		}
		return Action{Type: ActionShowResult, Text: args.Text}, nil
	}
	return Action{}, fmt.Errorf("%s is not a built-in action", call.Name)
}
