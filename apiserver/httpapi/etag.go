package httpapi

import (
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// ETag of an object is its quoted resourceVersion; it changes with every write.
func ETag(resourceVersion string) string { return `"` + resourceVersion + `"` }

// IfMatchInput is embedded by every ETag-protected write.
type IfMatchInput struct {
	IfMatch string `header:"If-Match" doc:"The ETag of the resource as last read; required. A stale value is refused with 412."`
}

// RequiredResourceVersion returns the resourceVersion the caller last read. A write without it
// is refused with 428, so that no client overwrites a change it has not seen.
func (in IfMatchInput) RequiredResourceVersion() (string, error) {
	value := strings.TrimSpace(in.IfMatch)
	if value == "" {
		return "", huma.Error428PreconditionRequired("this write needs the resource's current ETag in If-Match")
	}
	if value == "*" {
		return "", huma.Error428PreconditionRequired("If-Match must name the resource's ETag, not *")
	}
	value = strings.TrimPrefix(value, "W/")
	if len(value) < 2 || value[0] != '"' || value[len(value)-1] != '"' || strings.Contains(value, ",") {
		return "", huma.Error400BadRequest("If-Match must be one quoted ETag as returned in the ETag header")
	}
	return value[1 : len(value)-1], nil
}

// StaleETag refuses a write whose If-Match names an older version of the object (412).
func StaleETag(noun, name string) error {
	return huma.Error412PreconditionFailed(noun + " " + Quote(name) + " was changed since the ETag in If-Match was read; reload it and retry")
}
