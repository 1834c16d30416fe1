// Package provider is how the flow executor invokes an Agent: one interface, with the offline
// Deterministic provider (AI__Provider=Deterministic) for tests and diagnostics. Managed mode
// (the OpenAI-compatible provider resolved from the agent's ModelProfile and ModelProvider)
// plugs in behind the same interface.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"platform.dev/platform/apiserver/usage"
	"platform.dev/platform/internal/config"
)

// The functional actions an agent's answer can carry.
const (
	ActionRespond             = "respond"
	ActionRequestInput        = "requestInput"
	ActionRequestConfirmation = "requestConfirmation"
	ActionRequestChoice       = "requestChoice"
	ActionCreateTask          = "createTask"
	ActionShowResult          = "showResult"
	ActionShowError           = "showError"
	// ActionCallTools is not a functional action: the model asks for tool calls before it
	// answers. The executor runs them, persists them, and invokes the agent again with the
	// results in Request.Transcript.
	ActionCallTools = "callTools"
)

// Names of AI:Provider.
const (
	Deterministic = "Deterministic"
	Managed       = "Managed"

	providerKey = "AI:Provider"
)

// Agent is the pinned revision of the agent a step invokes.
type Agent struct {
	Name         string `json:"name"`
	UID          string `json:"uid,omitempty"`
	Revision     string `json:"revision,omitempty"`
	Generation   int64  `json:"generation,omitempty"`
	Handler      string `json:"handler,omitempty"`
	Instructions string `json:"instructions,omitempty"`
	ModelProfile string `json:"modelProfile,omitempty"`
	// ModelProfileNamespace is the kube namespace of the ModelProfile when it is not the
	// agent's own (an installed Pack's agent bound to a profile of the workspace's `default`).
	ModelProfileNamespace string `json:"modelProfileNamespace,omitempty"`
	// Tools are the names of the Tools the agent may call (only the enabled ones are offered).
	Tools []string `json:"tools,omitempty"`
}

// Request is one invocation of an agent.
type Request struct {
	// IdempotencyKey is the same for every try of one step attempt (run id, step, attempt), so a
	// call interrupted by a crash is retried as the same call.
	IdempotencyKey string
	// Attempt numbers the tries of the step, from 1.
	Attempt int
	Agent   Agent
	// Namespace is the workspace's namespace, where Managed mode resolves the agent's
	// ModelProfile and ModelProvider.
	Namespace string
	// Message is the text sent to the agent.
	Message string
	// Overrides are the run's overrides of the profile's generation settings.
	Overrides Overrides
	// Tools are the functions offered to the model besides the built-in functional actions (see
	// BuiltinTools): the agent's enabled Tools.
	Tools []ToolSpec
	// Transcript holds the model's earlier answers in this step that asked for tool calls, with
	// the results, oldest first.
	Transcript []Turn
}

// ToolSpec is a function offered to a model.
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is the JSON Schema (an object) of the arguments.
	Parameters json.RawMessage
}

// ToolCall is one call a model asked for, with its result once it has one.
type ToolCall struct {
	// ID is the model's id of the call, which the result answers.
	ID   string
	Name string
	// Arguments are the arguments as the model wrote them (JSON, unchecked).
	Arguments string
	Result    string
	IsError   bool
}

// Turn is an answer of the model that asked for tool calls.
type Turn struct {
	// Text is what the model said besides the calls.
	Text  string
	Calls []ToolCall
}

// Overrides are the only generation settings a run may override.
type Overrides struct {
	Temperature     *float64 `json:"temperature,omitempty"`
	MaxOutputTokens *int64   `json:"maxOutputTokens,omitempty"`
}

// Option is one answer offered by requestChoice.
type Option struct {
	Value string `json:"value"`
	Label string `json:"label,omitempty"`
}

// Action is an agent's answer: one functional action.
type Action struct {
	Type string
	// Text of respond, showResult and showError.
	Text string
	// Prompt of requestInput, requestConfirmation and requestChoice.
	Prompt string
	// Options of requestChoice.
	Options []Option
	// Title of createTask.
	Title string
	// ToolCalls of callTools; Text then holds what the model said besides them.
	ToolCalls []ToolCall
	// Deliverables are the durable files a respond, showResult or createTask declares; they
	// become the Task's artifacts (conversation text never does).
	Deliverables []Deliverable
	// ModelProvider and Model say where the answer came from, for run status.
	ModelProvider string
	Model         string
	// Usage is what the call consumed, as the provider reported it; nil when it reported none.
	Usage *Usage
}

// Usage is the tokens of one model call and, when the model has one, its price.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	// Price is the model's price from its ModelProvider's pricing; nil when it declares none.
	Price *usage.Price
}

// Deliverable is a file a result declares: its name, media type and content.
type Deliverable struct {
	Name      string
	MediaType string
	Content   string
}

// Provider invokes agents.
type Provider interface {
	// Name is the value of AI:Provider that selects it.
	Name() string
	// Invoke runs the agent once. A TransientError is retried with backoff.
	Invoke(ctx context.Context, req Request) (Action, error)
}

// TransientError is a failure worth retrying: a timeout or a 5xx of the model endpoint.
type TransientError struct{ Err error }

func (e *TransientError) Error() string { return e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// IsTransient reports whether err is worth retrying.
func IsTransient(err error) bool {
	var t *TransientError
	return errors.As(err, &t)
}

// FromConfig returns the provider AI:Provider selects; Managed when unset. A Managed provider
// resolves nothing until its Client is set (the kube API starts after the configuration is
// checked).
func FromConfig(cfg *config.Config) (Provider, error) {
	switch name := cfg.GetOr(providerKey, Managed); {
	case strings.EqualFold(name, Deterministic):
		return DeterministicProvider{}, nil
	case strings.EqualFold(name, Managed):
		return &ManagedProvider{Config: cfg}, nil
	default:
		return nil, fmt.Errorf("%s=%q: must be %s or %s", providerKey, name, Deterministic, Managed)
	}
}
