// Package agent reconciles Agents: it resolves each agent's ModelProfile, the profile's
// ModelProvider and the agent's Tools, and reports whether the agent can be invoked (Ready) and
// which model it calls (status.resolvedModel).
package agent
