package tools

import (
	"errors"
	"fmt"
)

// UnavailableError is a provider outage: the process could not start or exited, the URL did not
// answer or answered 5xx, the handshake timed out, or the provider spoke something that is not
// MCP. A step whose tool call meets one fails as transient, and is retried. Its message names
// the provider and what happened, never a credential or the provider's own output.
type UnavailableError struct {
	Provider string
	Reason   string
	// Timeout is set when the provider did not answer in time.
	Timeout bool
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("tool provider %q is unavailable: %s", e.Provider, e.Reason)
}

// ConfigurationError is a provider that cannot be used as declared: a command that is not
// allowed, a protocol the platform does not speak, a credential that does not resolve.
// Retrying does not help.
type ConfigurationError struct {
	Provider string
	Reason   string
}

func (e *ConfigurationError) Error() string {
	return fmt.Sprintf("tool provider %q cannot be used: %s", e.Provider, e.Reason)
}

// ErrToolNotAvailable: the tool does not exist, is disabled, or its provider no longer lists it.
// A model that calls such a tool reads this as the call's error result.
var ErrToolNotAvailable = errors.New("tool not available")

// IsUnavailable reports whether err is a provider outage.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}
