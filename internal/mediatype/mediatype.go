// Package mediatype checks media types that come from outside (a file a person sends, a
// deliverable a model declares) before the platform stores them and serves them back in a
// Content-Type header.
package mediatype

import (
	"mime"
	"strings"
)

// MaxLength bounds a media type, parameters included.
const MaxLength = 255

// Valid says whether s is a media type the platform keeps: `type/subtype` with optional
// parameters (RFC 2045 tokens, as mime.ParseMediaType reads them), at most MaxLength bytes, and
// no control character anywhere: mime.ParseMediaType skips CR and LF as white space between
// parameters, and a header value must never hold them.
func Valid(s string) bool {
	if s == "" || len(s) > MaxLength {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r > 0x7e {
			return false
		}
	}
	parsed, _, err := mime.ParseMediaType(s)
	if err != nil {
		return false
	}
	// mime.ParseMediaType also takes a bare token, such as a Content-Disposition's `attachment`.
	kind, subtype, ok := strings.Cut(parsed, "/")
	return ok && kind != "" && subtype != ""
}
