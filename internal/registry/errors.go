package registry

import (
	"errors"
	"fmt"
)

// Code is a stable error code of registry requests and documents: it is what refresh history
// records and Problem Details carry.
type Code string

const (
	// CodeURLRefused: an index URL with credentials, a query, a fragment, percent-encoding or a
	// scheme the registration does not allow.
	CodeURLRefused Code = "RegistryUrlRefused"
	// CodeLocationRefused: a location in a document that is malformed or leaves the index's origin.
	CodeLocationRefused Code = "RegistryLocationRefused"
	// CodeAddressRefused: the dialed address is private, loopback, link-local or multicast and
	// the registration does not allow it.
	CodeAddressRefused Code = "RegistryAddressRefused"
	// CodeRedirectRefused: a redirect that leaves the origin or changes the scheme.
	CodeRedirectRefused Code = "RegistryRedirectRefused"
	// CodeTooManyRedirects: more redirects than MaximumRedirects.
	CodeTooManyRedirects Code = "RegistryTooManyRedirects"
	// CodeTimeout: no complete answer within TimeoutSeconds (or ConnectTimeoutSeconds).
	CodeTimeout Code = "RegistryTimeout"
	// CodeTooSlow: a body arrived slower than the minimum rate.
	CodeTooSlow Code = "RegistryTooSlow"
	// CodeTooLarge: a body or document larger than its fixed limit.
	CodeTooLarge Code = "RegistryDocumentTooLarge"
	// CodeInvalidDocument: a document that is not valid JSON of its kind, has unknown or
	// duplicate fields, or breaks a rule of the contract.
	CodeInvalidDocument Code = "RegistryDocumentInvalid"
	// CodeUnsupportedVersion: a document of another contract version or kind.
	CodeUnsupportedVersion Code = "RegistryUnsupportedVersion"
	// CodeDigestMismatch: a document or archive whose sha256 is not the one that names it.
	CodeDigestMismatch Code = "RegistryDigestMismatch"
	// CodeHTTPStatus: an answer other than 200 (or 304 to a conditional request).
	CodeHTTPStatus Code = "RegistryHttpStatus"
	// CodeUnavailable: the registry could not be reached (DNS, connection, TLS).
	CodeUnavailable Code = "RegistryUnavailable"
	// CodeCredentialUnavailable: the staticBearer credential could not be resolved.
	CodeCredentialUnavailable Code = "RegistryCredentialUnavailable"
	// CodeRollback: an index with a lower serial than one already seen (decided by the refresh
	// service, which keeps the highest serial).
	CodeRollback Code = "RegistryRollback"
	// CodeDigestConflict: a version whose manifest digest differs from the first one seen
	// (decided by the refresh service's append-only record).
	CodeDigestConflict Code = "RegistryDigestConflict"
)

// Error is a refused registry request or document. Its message never holds a credential nor a
// document's content beyond the field at fault.
type Error struct {
	Code Code
	// Document is index, shard, manifest or archive ("" when not known).
	Document string
	// URL is the request's URL (index URLs carry no credentials, by ValidateIndexURL).
	URL string
	// Status is the HTTP status for CodeHTTPStatus.
	Status int
	Detail string
}

func (e *Error) Error() string {
	msg := e.Detail
	if e.Document != "" {
		msg = e.Document + ": " + msg
	}
	if e.URL != "" {
		msg += " (" + e.URL + ")"
	}
	return msg
}

// CodeOf is the Code of err, or "" when it is not a registry error.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func errorf(code Code, document, format string, args ...any) *Error {
	return &Error{Code: code, Document: document, Detail: fmt.Sprintf(format, args...)}
}
