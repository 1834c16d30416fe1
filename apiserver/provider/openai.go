package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// DefaultRequestTimeout bounds one HTTP request to a model endpoint when the endpoint sets none.
const DefaultRequestTimeout = 60 * time.Second

// Endpoint is everything needed to call one OpenAI-compatible endpoint. It holds the API key:
// never log or render it (String leaves it out).
type Endpoint struct {
	// Provider is the ModelProvider's name, reported as the run's modelProvider.
	Provider string
	// Type is the wire protocol: OpenAICompatible, AzureOpenAI or Ollama (the latter two through
	// their OpenAI-compatible surfaces).
	Type platformv1.ModelProviderType
	// BaseURL is the API base, e.g. https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent only to BaseURL; empty sends none (local servers).
	APIKey string
	// KeySource says where APIKey came from, for messages (the credential Secret or the fallback
	// variable); empty when there is no key.
	KeySource string
	// Timeout bounds one request; DefaultRequestTimeout when zero.
	Timeout time.Duration
	// HTTPClient is the transport; http.DefaultClient when nil.
	HTTPClient *http.Client
}

// String names the endpoint without its credential.
func (e Endpoint) String() string { return fmt.Sprintf("%s (%s)", e.Provider, e.Type) }

// Generation is the resolved sampling intent of one chat completion.
type Generation struct {
	Model           string
	Temperature     *float64
	TopP            *float64
	MaxOutputTokens *int64
	StopSequences   []string
	ReasoningEffort platformv1.ReasoningEffort
	OutputFormat    platformv1.OutputFormat
}

// DiscoveredModel is one entry of an endpoint's model list.
type DiscoveredModel struct {
	ID      string
	OwnedBy string
	// ContextWindowTokens is reported by some servers (vLLM's max_model_len); 0 when unknown.
	ContextWindowTokens int64
}

// OpenAIClient calls an OpenAI-compatible endpoint.
type OpenAIClient struct {
	endpoint Endpoint
	client   openai.Client
}

// NewOpenAIClient builds a client of e. The SDK's own retries are off: a transient failure is a
// TransientError, which the executor retries durably under the same idempotency key.
func NewOpenAIClient(e Endpoint) *OpenAIClient {
	if e.Timeout <= 0 {
		e.Timeout = DefaultRequestTimeout
	}
	httpClient := e.HTTPClient
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	opts := []option.RequestOption{
		option.WithBaseURL(baseURL(e)),
		option.WithHTTPClient(httpClient),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(e.Timeout),
		// The SDK reads OPENAI_* variables of the process; a provider's settings come only from its
		// ModelProvider and the platform configuration (the key and base URL are set below).
		option.WithHeaderDel("OpenAI-Organization"),
		option.WithHeaderDel("OpenAI-Project"),
	}
	switch {
	case e.APIKey == "":
		opts = append(opts, option.WithAPIKey(""))
	case e.Type == platformv1.AzureOpenAIProvider:
		opts = append(opts, option.WithAPIKey(""), option.WithHeader("api-key", e.APIKey))
	default:
		opts = append(opts, option.WithAPIKey(e.APIKey))
	}
	return &OpenAIClient{endpoint: e, client: openai.NewClient(opts...)}
}

// baseURL is the OpenAI-compatible API base of e. Azure resources and Ollama serve it under a
// fixed path when their endpoint names only the host.
func baseURL(e Endpoint) string {
	base := strings.TrimRight(e.BaseURL, "/")
	hasPath := strings.Count(base, "/") > 2
	switch {
	case e.Type == platformv1.AzureOpenAIProvider && !hasPath:
		base += "/openai/v1"
	case e.Type == platformv1.OllamaProvider && !hasPath:
		base += "/v1"
	}
	return base + "/"
}

// Conversation is one model call of an agent step: the agent's instructions (system message),
// the step's message (user message), the functions offered, and the earlier answers of the step
// that asked for tool calls, with their results.
type Conversation struct {
	Instructions string
	Message      string
	Tools        []ToolSpec
	Transcript   []Turn
}

// Chat asks the model once: instructions as the system message, message as the user message.
func (c *OpenAIClient) Chat(ctx context.Context, g Generation, instructions, message string) (Action, error) {
	return c.Converse(ctx, g, Conversation{Instructions: instructions, Message: message})
}

// maxToolCallsPerAnswer bounds the calls read from one answer; the executor bounds the calls
// of a step.
const maxToolCallsPerAnswer = 64

// Converse asks the model once with the conversation so far. An answer that calls functions is
// ActionCallTools with the calls (the executor tells built-in actions from tools); any other
// answer is respond with its text.
func (c *OpenAIClient) Converse(ctx context.Context, g Generation, conv Conversation) (Action, error) {
	if g.Model == "" {
		return Action{}, fmt.Errorf("model provider %s: no model: set definition.modelId on the model profile", c.endpoint.Provider)
	}
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(g.Model)}
	if conv.Instructions != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(conv.Instructions))
	}
	params.Messages = append(params.Messages, openai.UserMessage(conv.Message))
	for _, turn := range conv.Transcript {
		assistant := openai.ChatCompletionAssistantMessageParam{}
		if turn.Text != "" {
			assistant.Content.OfString = openai.String(turn.Text)
		}
		for _, call := range turn.Calls {
			assistant.ToolCalls = append(assistant.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: call.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: call.Name, Arguments: call.Arguments}}})
		}
		params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &assistant})
		for _, call := range turn.Calls {
			content := call.Result
			if call.IsError {
				content = "Error: " + content
			}
			params.Messages = append(params.Messages, openai.ToolMessage(content, call.ID))
		}
	}
	for _, t := range conv.Tools {
		var schema map[string]any
		if err := json.Unmarshal(t.Parameters, &schema); err != nil || schema == nil {
			schema = map[string]any{"type": "object"}
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if g.Temperature != nil {
		params.Temperature = openai.Float(*g.Temperature)
	}
	if g.TopP != nil {
		params.TopP = openai.Float(*g.TopP)
	}
	if g.MaxOutputTokens != nil {
		params.MaxCompletionTokens = openai.Int(*g.MaxOutputTokens)
	}
	if len(g.StopSequences) > 0 {
		params.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: g.StopSequences}
	}
	switch g.ReasoningEffort {
	case platformv1.MinimalReasoning, platformv1.LowReasoning, platformv1.MediumReasoning, platformv1.HighReasoning:
		params.ReasoningEffort = shared.ReasoningEffort(strings.ToLower(string(g.ReasoningEffort)))
	}
	if g.OutputFormat == platformv1.JSONOutput {
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	}
	completion, err := c.client.Chat.Completions.New(ctx, params)
	if err != nil {
		return Action{}, c.failure(ctx, "chat completion", err)
	}
	if len(completion.Choices) == 0 {
		return Action{}, &TransientError{Err: fmt.Errorf("model provider %s: the chat completion has no choices", c.endpoint.Provider)}
	}
	choice := completion.Choices[0]
	model := completion.Model
	if model == "" {
		model = g.Model
	}
	var used *Usage
	if u := completion.Usage; u.PromptTokens > 0 || u.CompletionTokens > 0 {
		used = &Usage{InputTokens: max(u.PromptTokens, 0), OutputTokens: max(u.CompletionTokens, 0)}
	}
	if calls := choice.Message.ToolCalls; len(calls) > 0 {
		act := Action{Type: ActionCallTools, Text: choice.Message.Content, ModelProvider: c.endpoint.Provider, Model: model, Usage: used}
		for i, call := range calls[:min(len(calls), maxToolCallsPerAnswer)] {
			id := call.ID
			if id == "" {
				id = fmt.Sprintf("call_%d", i+1)
			}
			act.ToolCalls = append(act.ToolCalls, ToolCall{ID: id, Name: call.Function.Name, Arguments: call.Function.Arguments})
		}
		return act, nil
	}
	act := Action{Type: ActionRespond, Text: choice.Message.Content, ModelProvider: c.endpoint.Provider, Model: model, Usage: used}
	if choice.Message.Refusal != "" && act.Text == "" {
		act.Type, act.Text = ActionShowError, "the model refused to answer"
	}
	return act, nil
}

// Models lists the models the endpoint serves.
func (c *OpenAIClient) Models(ctx context.Context) ([]DiscoveredModel, error) {
	pager := c.client.Models.ListAutoPaging(ctx)
	var out []DiscoveredModel
	for pager.Next() {
		m := pager.Current()
		d := DiscoveredModel{ID: m.ID, OwnedBy: m.OwnedBy}
		if f, ok := m.JSON.ExtraFields["max_model_len"]; ok {
			d.ContextWindowTokens, _ = strconv.ParseInt(f.Raw(), 10, 64)
		}
		if d.ID != "" {
			out = append(out, d)
		}
	}
	if err := pager.Err(); err != nil {
		return nil, c.failure(ctx, "model list", err)
	}
	return out, nil
}

// EndpointError is a failure the endpoint reported or a failure to reach it. Its message names
// the provider, the operation and the HTTP status, never the request, the response body or the
// credential: providers echo parts of keys and prompts in their error bodies.
type EndpointError struct {
	Provider  string
	Operation string
	// StatusCode is the endpoint's HTTP status; 0 when it was not reached or did not answer.
	StatusCode int
	// Code is the endpoint's machine-readable error code, when it gives one.
	Code    string
	Timeout bool
	reason  string
}

func (e *EndpointError) Error() string {
	return fmt.Sprintf("model provider %s: %s: %s", e.Provider, e.Operation, e.reason)
}

// failure classifies err: timeouts, unreachable endpoints, 429 and 5xx are transient.
func (c *OpenAIClient) failure(ctx context.Context, operation string, err error) error {
	if ctx.Err() != nil {
		// The caller gave up (stopping, lease lost, its own deadline): it decides what happens.
		return ctx.Err()
	}
	out := &EndpointError{Provider: c.endpoint.Provider, Operation: operation}
	var apiErr *openai.Error
	var netErr net.Error
	switch {
	case errors.As(err, &apiErr):
		out.StatusCode, out.Code = apiErr.StatusCode, safeCode(apiErr.Code)
		out.reason = fmt.Sprintf("the endpoint answered %d %s", apiErr.StatusCode, http.StatusText(apiErr.StatusCode))
		if out.Code != "" {
			out.reason += " (" + out.Code + ")"
		}
		switch {
		case apiErr.StatusCode == http.StatusUnauthorized || apiErr.StatusCode == http.StatusForbidden:
			switch {
			case c.endpoint.KeySource != "":
				out.reason += "; check the API key, " + c.endpoint.KeySource
			case c.endpoint.APIKey != "":
				out.reason += "; check the API key"
			default:
				out.reason += "; the provider sent no API key: name a credential Secret in definition.credential"
			}
		case apiErr.StatusCode == http.StatusTooManyRequests || apiErr.StatusCode >= 500:
			return &TransientError{Err: out}
		}
		return out
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		out.Timeout = true
		out.reason = fmt.Sprintf("the endpoint did not answer within %s", c.endpoint.Timeout)
		return &TransientError{Err: out}
	default:
		// Connection refused, DNS, TLS: the URL is in err, and a URL may carry a key in its query,
		// so only the kind of failure is reported.
		out.reason = "the endpoint could not be reached"
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Op != "" {
			out.reason += " (" + opErr.Op + ")"
		}
		return &TransientError{Err: out}
	}
}

// safeCode keeps an endpoint's error code only when it looks like a code (some servers put
// free text there).
func safeCode(code string) string {
	if len(code) > 64 {
		return ""
	}
	for _, r := range code {
		if !(r == '_' || r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return ""
		}
	}
	return code
}
