package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// notInObjectName is what folding replaces: anything but lowercase letters, digits and '-' (a
// dot would allow empty labels, as in "a..b").
var notInObjectName = regexp.MustCompile(`[^a-z0-9-]+`)

// ObjectName is the name of the Tool object of a provider's tool: <provider>-<tool name> folded
// to a DNS subdomain. When folding loses information (case, characters outside the rule) or the
// name is long, a digest of the tool name keeps tools whose names fold alike apart.
func ObjectName(provider, toolName string) string {
	folded := strings.Trim(notInObjectName.ReplaceAllString(strings.ToLower(toolName), "-"), "-.")
	name := provider + "-" + folded
	if folded != toolName || len(name) > 200 {
		name = strings.TrimRight(name[:min(len(name), 200)], "-.") + "-" + digest(toolName)
	}
	return name
}

// maxFunctionName is the longest function name OpenAI-compatible endpoints accept.
const maxFunctionName = 64

// FunctionName is the name under which a Tool object is offered to a model and at /mcp: its
// name with dots as underscores (function names allow [A-Za-z0-9_-]), shortened with a digest
// beyond 64 characters. Object names have no underscores, so two Tools never share a function
// name, and none collides with a built-in action (those have capitals) or an internal /mcp tool
// (those start with platform_).
func FunctionName(objectName string) string {
	name := strings.ReplaceAll(objectName, ".", "_")
	if len(name) > maxFunctionName {
		name = strings.TrimRight(name[:maxFunctionName-9], "-_") + "_" + digest(objectName)
	}
	return name
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

// validToolName is the rule of the MCP specification for tool names: 1 to 128 characters of
// letters, digits, _, - and . (the Tool object's toolName allows 256).
var validToolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
