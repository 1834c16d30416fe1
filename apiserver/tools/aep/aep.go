// Package aep holds the wire types of the platform's extension protocol, version 2026-09-18
// (docs/extension-protocol.md): an extension is an HTTP service that describes itself at
// /.well-known/aep and runs its tools at one invocation endpoint; the Secrets it needs reach it
// as one-use capabilities that it redeems at the platform. The platform's client is in the tools
// package; an extension imports only this package.
package aep

import (
	"encoding/json"
	"time"
)

const (
	// Version is the protocol version this package speaks. A discovery document of another
	// version is refused.
	Version = "2026-09-18"
	// DiscoveryPath is where an extension publishes its discovery document, below its base URL.
	DiscoveryPath = "/.well-known/aep"
	// DefaultInvokePath is the invocation endpoint when the document names none.
	DefaultInvokePath = "/aep/invoke"
	// VersionHeader carries the protocol version on every request the platform makes.
	VersionHeader = "AEP-Version"
	// IdempotencyKeyHeader repeats the invocation's idempotencyKey, for proxies and logs.
	IdempotencyKeyHeader = "Idempotency-Key"
	// RedeemPath is the platform's endpoint where an extension redeems a capability.
	RedeemPath = "/api/extensions/capabilities/redeem"
)

// Document is the discovery document at DiscoveryPath.
type Document struct {
	// ProtocolVersion must be Version.
	ProtocolVersion string `json:"protocolVersion"`
	// Extension says who the extension is.
	Extension Identity `json:"extension"`
	// InvokePath is the path of the invocation endpoint below the base URL (starting with
	// "/"); DefaultInvokePath when empty.
	InvokePath string `json:"invokePath,omitempty"`
	// Secrets are the Secret roles the extension asks for; the ToolProvider binds a Secret to
	// each (definition.extension.secrets).
	Secrets []SecretRole `json:"secrets,omitempty"`
	// Tools are the tools the extension offers.
	Tools []Tool `json:"tools"`
}

// Identity names an extension.
type Identity struct {
	Name        string `json:"name"`
	Version     string `json:"version,omitempty"`
	Description string `json:"description,omitempty"`
}

// SecretRole is one Secret an extension asks for, by the role it plays.
type SecretRole struct {
	// Name is 1 to 64 lowercase letters, digits, '.', '_' or '-'.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Tool is one tool of an extension.
type Tool struct {
	// Name is 1 to 128 letters, digits, '_', '-' or '.'.
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema (an object) of the arguments; {"type":"object"} when
	// omitted.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// Secrets are the roles (of Document.Secrets) the tool needs: each call carries a
	// capability for each of them.
	Secrets []string `json:"secrets,omitempty"`
}

// Invocation is the body of a POST to the invocation endpoint.
type Invocation struct {
	ProtocolVersion string `json:"protocolVersion"`
	// Tool is the name of the tool to run.
	Tool string `json:"tool"`
	// Arguments is a JSON object, as the model wrote it.
	Arguments json.RawMessage `json:"arguments"`
	// IdempotencyKey is the same for every execution of one call in a run: a repetition after a
	// crash carries the key of the first attempt.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// Scope is the consumer scope of the call (the namespace of the ToolProvider); a capability
	// is redeemed for this scope only.
	Scope string `json:"scope"`
	// Capabilities hold one capability per Secret role the tool needs.
	Capabilities map[string]Capability `json:"capabilities,omitempty"`
}

// Capability lets the extension read one Secret once, shortly after the call began.
type Capability struct {
	// Token is the capability, sent back to RedeemURL.
	Token string `json:"token"`
	// RedeemURL is the platform endpoint that redeems it.
	RedeemURL string    `json:"redeemUrl"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Result is the body of a 200 answer of the invocation endpoint. A tool that fails answers 200
// with IsError; a 4xx answer is a refused call (the model reads the status), a 5xx answer an
// outage of the extension.
type Result struct {
	Content []Content `json:"content,omitempty"`
	// StructuredContent is a JSON value the model reads when Content is empty.
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

// Content is one part of a result: type "text" with Text; other types are shown to the model by
// their type only.
type Content struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

// RedeemRequest is the body of a POST to RedeemPath.
type RedeemRequest struct {
	Capability string `json:"capability"`
	// Scope must be the Invocation's Scope.
	Scope string `json:"scope"`
}

// RedeemResponse is the answer of a successful redemption.
type RedeemResponse struct {
	Role  string `json:"role"`
	Value string `json:"value"`
}
