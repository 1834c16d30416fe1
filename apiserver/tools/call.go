package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// IdempotencyMetaKey is the _meta key of a tool call's idempotency key: every execution of one
// call in a run carries the same key, so a provider can tell a repetition after a crash.
const IdempotencyMetaKey = "platform.dev/idempotency-key"

// Result is the outcome of a tool call, as a model reads it.
type Result struct {
	Text      string
	IsError   bool
	Truncated bool
	Duration  time.Duration
}

// Call calls the enabled Tool named toolName of namespace with arguments (a JSON object) under
// idempotencyKey. A Tool that does not exist, is disabled or Missing is ErrToolNotAvailable;
// a provider outage an UnavailableError; a tool that fails, refuses the arguments or answers
// too much is a Result with IsError. A call nested deeper than MaxCallDepth in the chain of ctx
// (see WithCallChain) is ErrCallChainTooDeep, and one over the workspace's concurrent calls
// ErrTooManyCalls: neither is made.
func (m *Manager) Call(ctx context.Context, namespace, toolName string, arguments json.RawMessage, idempotencyKey string) (Result, error) {
	chain := CallChainFrom(ctx)
	chain.Depth++
	if chain.Depth > MaxCallDepth {
		return Result{}, ErrCallChainTooDeep
	}
	if chain.ID == "" {
		chain.ID = idempotencyKey
	}
	if !m.calls.Acquire(namespace) {
		return Result{}, fmt.Errorf("%w (%d)", ErrTooManyCalls, m.opts.MaxConcurrentCallsPerWorkspace)
	}
	defer m.calls.Release(namespace)
	// The provider's requests carry the chain (see boundedTransport), so that the platform's own
	// /mcp knows a call that comes back.
	ctx = WithCallChain(ctx, chain)
	tool := &platformv1.Tool{}
	if err := m.opts.Kube.Get(ctx, client.ObjectKey{Namespace: namespace, Name: toolName}, tool); err != nil {
		if apierrors.IsNotFound(err) {
			return Result{}, fmt.Errorf("tool %q does not exist: %w", toolName, ErrToolNotAvailable)
		}
		return Result{}, err
	}
	if reason := Unavailability(tool); reason != "" {
		return Result{}, fmt.Errorf("tool %q %s: %w", toolName, reason, ErrToolNotAvailable)
	}
	p, err := m.provider(ctx, namespace, string(tool.Definition.Provider.Name))
	if apierrors.IsNotFound(err) {
		return Result{}, fmt.Errorf("the provider of tool %q does not exist: %w", toolName, ErrToolNotAvailable)
	}
	if err != nil {
		return Result{}, err
	}
	// The arguments go to the provider as the model wrote them (numbers keep their precision);
	// only their shape is checked here.
	args := json.RawMessage(`{}`)
	if len(arguments) > 0 {
		var object map[string]json.RawMessage
		if err := json.Unmarshal(arguments, &object); err != nil || object == nil {
			return Result{Text: "the arguments are not a JSON object", IsError: true}, nil
		}
		args = arguments
	}
	start := time.Now()
	s, err := m.connect(ctx, p)
	if err != nil {
		return Result{}, err
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout(p))
	defer cancel()
	res, err := s.peer.call(callCtx, &mcp.CallToolParams{Name: tool.Definition.ToolName, Arguments: args,
		Meta: mcp.Meta{IdempotencyMetaKey: idempotencyKey}})
	elapsed := time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		if s.faults.oversized.Load() {
			m.failed(p, s, callCtx, err, "calling "+tool.Definition.ToolName)
			return Result{Text: fmt.Sprintf("the tool's answer exceeded %d bytes and was discarded", m.opts.MaxMessageBytes), IsError: true, Duration: elapsed}, nil
		}
		var refusal *extensionRefusal
		if errors.As(err, &refusal) {
			// The extension answered with a 4xx status: the model reads it and may correct
			// itself. Only the status is kept: bodies may echo input.
			return Result{Text: fmt.Sprintf("the extension refused the call (HTTP %d)", refusal.status), IsError: true, Duration: elapsed}, nil
		}
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) && rpcErr.Code == CodeCallRefused {
			return Result{Text: fmt.Sprintf("the tool provider refused the call: a limit of nested or concurrent tool calls was reached "+
				"(JSON-RPC error %d)", rpcErr.Code), IsError: true, Duration: elapsed}, nil
		}
		if errors.As(err, &rpcErr) && !transportCodes[rpcErr.Code] {
			// The provider answered, refusing the call (unknown tool, invalid params): the model
			// reads it and may correct itself. Only the code is kept: messages may echo input.
			return Result{Text: fmt.Sprintf("the tool provider refused the call (JSON-RPC error %d)", rpcErr.Code), IsError: true, Duration: elapsed}, nil
		}
		return Result{}, m.failed(p, s, callCtx, err, "calling "+tool.Definition.ToolName)
	}
	return m.resultOf(res, elapsed), nil
}

// transportCodes are the JSON-RPC codes the SDK itself gives failures of the transport (the
// request never reached the provider, or the session is closing): outages, not refusals.
var transportCodes = map[int64]bool{0: true, -32001: true, -32003: true, -32004: true, -32005: true}

// Unavailability says why agents may not call tool now ("" when they may).
func Unavailability(tool *platformv1.Tool) string {
	switch {
	case !tool.DeletionTimestamp.IsZero():
		return "is being deleted"
	case !tool.Definition.Enabled:
		return "is disabled"
	case tool.Status.Availability == platformv1.ToolMissing:
		return "is no longer listed by its provider"
	}
	return ""
}

// resultOf flattens a call's content into the text a model reads, cut at MaxResultBytes.
func (m *Manager) resultOf(res *mcp.CallToolResult, elapsed time.Duration) Result {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s]", c.URI))
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s, not shown]", c.Resource.URI))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	text := strings.Join(parts, "\n")
	out := Result{Text: text, IsError: res.IsError, Duration: elapsed}
	if len(res.InputRequests) > 0 {
		out.Text, out.IsError = "the tool asked for more input, which the platform does not provide to tools", true
	}
	if len(out.Text) > m.opts.MaxResultBytes {
		out.Text = truncate(out.Text, m.opts.MaxResultBytes) + fmt.Sprintf("\n[cut: the result had %d bytes; at most %d are kept]", len(text), m.opts.MaxResultBytes)
		out.Truncated = true
	}
	return out
}
