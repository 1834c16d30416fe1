// Package openaitest is an in-process server speaking the OpenAI wire format
// (/v1/chat/completions, /v1/models), for tests of the Managed provider, the executor and the
// service API without a model.
package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// ChatRequest is what the server recorded of one chat completion request.
type ChatRequest struct {
	Authorization       string
	Model               string        `json:"model"`
	Messages            []ChatMessage `json:"messages"`
	Temperature         *float64      `json:"temperature"`
	TopP                *float64      `json:"top_p"`
	MaxCompletionTokens *int64        `json:"max_completion_tokens"`
	Tools               []ChatTool    `json:"tools"`
}

// ChatMessage is one message of a chat completion request.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCallID is set on a tool result, ToolCalls on an assistant message that called tools.
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
}

// ChatTool is a function offered to the model.
type ChatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// ToolCall is a function call of an assistant message.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Call is a tool call an Answer makes.
func Call(id, name, arguments string) ToolCall {
	c := ToolCall{ID: id, Type: "function"}
	c.Function.Name, c.Function.Arguments = name, arguments
	return c
}

// Answer is a scripted answer of the model: content, or tool calls.
type Answer struct {
	Content   string
	ToolCalls []ToolCall
}

// Functions are the names of the functions the request offers.
func (r ChatRequest) Functions() []string {
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Function.Name)
	}
	return names
}

// ToolResults are the results of tool calls in the request, by call id.
func (r ChatRequest) ToolResults() map[string]string {
	out := map[string]string{}
	for _, m := range r.Messages {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

// Server is a fake OpenAI-compatible endpoint. Its fields may be changed between requests.
type Server struct {
	*httptest.Server

	mu sync.Mutex
	// APIKey, when set, is the only bearer token accepted; others are 401.
	APIKey string
	// Models are the ids /v1/models lists.
	Models []string
	// FailWith, when set, is the status of the first FailTimes chat requests (every one when
	// FailTimes is 0).
	FailWith  int
	FailTimes int
	// Delay holds every answer back (chat and model list).
	Delay time.Duration
	// Reply makes the answer's content; "echo: <last user message>" when nil.
	Reply func(ChatRequest) string
	// Answer, when set, makes the whole answer (content or tool calls) instead of Reply.
	Answer func(ChatRequest) Answer
	// Usage, when set, is the usage the answer reports (prompt and completion tokens); 1 and 1
	// when nil.
	Usage func(ChatRequest) (prompt, completion int64)

	chats    []ChatRequest
	failures int
}

// BaseURL is the endpoint a ModelProvider names: the server's URL and /v1.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Chats are the chat completion requests received so far.
func (s *Server) Chats() []ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ChatRequest(nil), s.chats...)
}

// Set changes the server's behavior under its lock.
func (s *Server) Set(change func(*Server)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(s)
}

// New starts a server; t.Cleanup-style closing is the caller's (Close).
func New() *Server {
	s := &Server{Models: []string{"gpt-test"}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("GET /v1/models", s.models)
	s.Server = httptest.NewServer(mux)
	return s
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	key := s.APIKey
	s.mu.Unlock()
	if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
		// Real endpoints echo part of the presented key; the client must not pass it on.
		writeError(w, http.StatusUnauthorized, "invalid_api_key", "Incorrect API key provided: "+r.Header.Get("Authorization"))
		return false
	}
	return true
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req ChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	req.Authorization = r.Header.Get("Authorization")
	s.mu.Lock()
	s.chats = append(s.chats, req)
	delay, reply, answer, usage := s.Delay, s.Reply, s.Answer, s.Usage
	fail := s.FailWith != 0 && (s.FailTimes == 0 || s.failures < s.FailTimes)
	if fail {
		s.failures++
	}
	status := s.FailWith
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if !s.authorized(w, r) {
		return
	}
	if fail {
		writeError(w, status, "server_error", "upstream failed while reading the prompt: "+lastUser(req))
		return
	}
	a := Answer{Content: "echo: " + lastUser(req)}
	switch {
	case answer != nil:
		a = answer(req)
	case reply != nil:
		a.Content = reply(req)
	}
	message := map[string]any{"role": "assistant", "content": a.Content}
	finish := "stop"
	if len(a.ToolCalls) > 0 {
		message["tool_calls"], finish = a.ToolCalls, "tool_calls"
	}
	prompt, completion := int64(1), int64(1)
	if usage != nil {
		prompt, completion = usage(req)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": message}},
		"usage":   map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
	})
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ids, delay := append([]string(nil), s.Models...), s.Delay
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if !s.authorized(w, r) {
		return
	}
	data := make([]any, 0, len(ids))
	for _, id := range ids {
		data = append(data, map[string]any{"id": id, "object": "model", "created": 1700000000, "owned_by": "test", "max_model_len": 8192})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

func lastUser(req ChatRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Content
		}
	}
	return ""
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"error":{"message":%q,"type":%q,"code":%q,"param":null}}`, message, code, code)
}
