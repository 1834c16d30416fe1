package tools

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"github.com/google/uuid"
)

// A tool can reach the platform again: a ToolProvider at the platform's own /mcp, whose tool
// calls a tool of that provider, calls itself. Every outbound MCP request therefore says how
// deep in a chain of tool calls it is made and which chain it belongs to, and the platform's
// /mcp reads both, so a chain that comes back is refused past MaxCallDepth instead of
// recursing until someone disables the Tool.
const (
	// CallDepthHeader carries the number of tool calls the request is nested in: 1 for a call
	// that a run or an /mcp client made, 2 for a call made while serving that one, ...
	CallDepthHeader = "Platform-Tool-Call-Depth"
	// CallChainHeader names the chain: the run, or the /mcp request that began it.
	CallChainHeader = "Platform-Tool-Call-Chain"
	// MaxCallDepth is how deeply tool calls may nest: a run's (or an /mcp client's) call, a
	// call that the tool makes back into the platform, and one more. Legitimate uses (a
	// provider that is the platform's own /mcp, serving its internal tools) need 1.
	MaxCallDepth = 3
	// DefaultMaxConcurrentCallsPerWorkspace bounds the tool calls under way in one workspace,
	// whoever makes them (runs, /mcp clients, tools calling back): a chain that escapes the
	// depth header (through a provider that does not forward it) is stopped here, and no
	// workspace holds more than its share of connections and processes.
	DefaultMaxConcurrentCallsPerWorkspace = 16
)

// CodeCallRefused is the JSON-RPC error code with which the platform's /mcp refuses a call
// past a limit: nested too deeply, too many under way, a batch too big.
const CodeCallRefused = -32050

// ErrCallChainTooDeep: a tool call nested deeper than MaxCallDepth, which is not made.
var ErrCallChainTooDeep = fmt.Errorf("tool calls nest deeper than %d (a tool that calls back into the platform)", MaxCallDepth)

// ErrTooManyCalls: the workspace has as many tool calls under way as it may; the call is not
// made.
var ErrTooManyCalls = errors.New("too many tool calls are under way in this workspace")

// IsRefused reports whether err refused a call before it was made (too deep, too many): the
// caller reads it as the call's error result, and retrying at once does not help.
func IsRefused(err error) bool {
	return errors.Is(err, ErrCallChainTooDeep) || errors.Is(err, ErrTooManyCalls)
}

// CallChain is where a tool call sits: the chain it belongs to and how many calls it is nested
// in (its own included).
type CallChain struct {
	ID    string
	Depth int
}

type callChainKey struct{}

// WithCallChain marks ctx as being inside chain: calls made with it are one level deeper.
func WithCallChain(ctx context.Context, chain CallChain) context.Context {
	return context.WithValue(ctx, callChainKey{}, chain)
}

// CallChainFrom is the chain ctx is inside (depth 0 and no ID outside any).
func CallChainFrom(ctx context.Context) CallChain {
	c, _ := ctx.Value(callChainKey{}).(CallChain)
	return c
}

// validChainID keeps what a client sends short and printable: it goes to logs and headers.
var validChainID = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,128}$`)

// ParseCallChain reads the chain headers of a request to /mcp. Without them the request begins
// a chain of its own (a new ID, depth 0); a depth that is not a number from 0 to 1000 is an
// error.
func ParseCallChain(depthValue, idValue string) (CallChain, error) {
	chain := CallChain{ID: idValue}
	if !validChainID.MatchString(idValue) {
		chain.ID = uuid.NewString()
	}
	if depthValue == "" {
		return chain, nil
	}
	depth, err := strconv.Atoi(depthValue)
	if err != nil || depth < 0 || depth > 1000 {
		return CallChain{}, fmt.Errorf("the %s header must be a number of nested tool calls", CallDepthHeader)
	}
	chain.Depth = depth
	return chain, nil
}

// Slots count what is under way per key (a workspace, a Principal), up to a maximum each.
type Slots struct {
	mu    sync.Mutex
	max   int
	inUse map[string]int
}

// NewSlots allows max at once per key.
func NewSlots(max int) *Slots { return &Slots{max: max, inUse: map[string]int{}} }

// Acquire takes a slot of key, or reports false when all of its slots are taken.
func (s *Slots) Acquire(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inUse[key] >= s.max {
		return false
	}
	s.inUse[key]++
	return true
}

// Release gives back a slot that Acquire took.
func (s *Slots) Release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inUse[key]--; s.inUse[key] <= 0 {
		delete(s.inUse, key)
	}
}
