package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/apiserver/workplace"
	"platform.dev/platform/internal/publication"
)

// Problem turns an error from the kube API or the domain into Problem Details (RFC 9457); it is
// the one place that does. Errors that are already huma status errors pass through.
func Problem(err error) error {
	if err == nil {
		return nil
	}
	var statusErr huma.StatusError
	if errors.As(err, &statusErr) {
		return err
	}
	if workErr := workProblem(err); workErr != nil {
		return workErr
	}
	if p := identityProblem(err); p != nil {
		return p
	}
	if p := publicationProblem(err); p != nil {
		return p
	}
	if p := secretsProblem(err); p != nil {
		return p
	}
	if p := workplaceProblem(err); p != nil {
		return p
	}
	var kube apierrors.APIStatus
	if !errors.As(err, &kube) {
		return Internal(err)
	}
	status := kube.Status()
	resource := describe(status.Details)
	switch {
	case apierrors.IsNotFound(err):
		return huma.Error404NotFound(resource + " not found")
	case apierrors.IsAlreadyExists(err):
		return huma.Error409Conflict(resource + " already exists")
	case apierrors.IsConflict(err):
		// A kube update conflict is a stale ETag: the caller must reload and retry.
		return huma.Error412PreconditionFailed(resource + " was changed since the ETag in If-Match was read; reload it and retry")
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return invalid(status)
	case apierrors.IsForbidden(err):
		// A write that the platform's admission rules refuse (a referenced Agent, a system-managed
		// Flow, ...) conflicts with the state of the workspace: 409 with the rule's reason.
		if reason, ok := ruleRefusal(status); ok {
			return huma.Error409Conflict(reason)
		}
		return huma.Error403Forbidden(status.Message)
	case apierrors.IsUnauthorized(err):
		return huma.Error401Unauthorized("authentication required")
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), apierrors.IsTooManyRequests(err):
		return huma.Error503ServiceUnavailable("the management store is busy; retry")
	case apierrors.IsServiceUnavailable(err):
		return huma.Error503ServiceUnavailable("the management store is not ready; retry")
	}
	return Internal(err)
}

// ruleRefusal is the reason of a refusal by the platform's admission rules, which carries a cause
// of type RuleRefusedCause.
func ruleRefusal(status metav1.Status) (string, bool) {
	if status.Details == nil {
		return "", false
	}
	for _, cause := range status.Details.Causes {
		if cause.Type == platformv1.RuleRefusedCause && cause.Message != "" {
			return cause.Message, true
		}
	}
	return "", false
}

// workProblem maps the Work store's errors; nil for any other error. Their messages are written
// for people and hold no token, prompt or answer.
func workProblem(err error) error {
	switch {
	case errors.Is(err, work.ErrNotFound):
		return huma.Error404NotFound(withoutSentinel(err, work.ErrNotFound))
	case errors.Is(err, work.ErrInvalidToken):
		return huma.Error400BadRequest(withoutSentinel(err, work.ErrInvalidToken))
	case errors.Is(err, work.ErrInvalidInput):
		return huma.Error400BadRequest(withoutSentinel(err, work.ErrInvalidInput))
	case errors.Is(err, work.ErrConflict):
		return huma.Error409Conflict(withoutSentinel(err, work.ErrConflict))
	case errors.Is(err, work.ErrEscalated):
		return NewCodedProblem(http.StatusForbidden, EscalatedCode, EscalatedDetail, nil)
	case errors.Is(err, work.ErrStale):
		return huma.Error412PreconditionFailed(withoutSentinel(err, work.ErrStale))
	}
	return nil
}

// withoutSentinel is err's message for people: without the ": conflict" that wrapping the
// sentinel (which picks the status) appends. A bare sentinel ("not found") stays.
func withoutSentinel(err, sentinel error) string {
	msg := err.Error()
	if trimmed := strings.TrimSuffix(msg, ": "+sentinel.Error()); trimmed != "" {
		return trimmed
	}
	return msg
}

// publicationProblem maps the errors of publication: a draft or version that cannot be published
// (422 with its field paths) and a contradiction of what is published (409); nil for any other.
func publicationProblem(err error) error {
	var invalid *publication.InvalidError
	switch {
	case errors.As(err, &invalid):
		return FieldErrors(invalid.Errs)
	case errors.Is(err, publication.ErrConflict):
		return huma.Error409Conflict(withoutSentinel(err, publication.ErrConflict))
	}
	return nil
}

// secretsProblem maps the errors of Secrets and Vaults; nil for any other error. No message holds
// a value or a key: they name Secrets, Vaults, scopes and where the master key comes from.
func secretsProblem(err error) error {
	var (
		refusal     *secrets.Refusal
		unavailable *secrets.UnavailableError
	)
	switch {
	case errors.Is(err, secrets.ErrValueEmpty):
		return BodyInvalid("value", "at least one byte; remove a value with DELETE instead")
	case errors.Is(err, secrets.ErrValueTooLarge):
		return BodyInvalid("value", fmt.Sprintf("at most %d bytes", secrets.MaxValueBytes))
	case errors.As(err, &refusal):
		return huma.Error409Conflict("the Secret's Vault cannot be used: " + refusal.Message)
	case errors.As(err, &unavailable):
		return huma.Error409Conflict(unavailable.Error())
	case errors.Is(err, secrets.ErrNotLocal), errors.Is(err, secrets.ErrValueUnreadable):
		return huma.Error409Conflict(err.Error())
	case errors.Is(err, secrets.ErrValueMissing):
		return huma.Error404NotFound(err.Error())
	case errors.Is(err, secrets.ErrMasterKeyExists):
		return huma.Error409Conflict(err.Error() + "; nothing was changed")
	}
	return nil
}

// workplaceProblem maps the Workplace store's errors; nil for any other error. Their messages
// are written for people and hold no token, prompt or answer.
func workplaceProblem(err error) error {
	switch {
	case errors.Is(err, workplace.ErrNotFound):
		return huma.Error404NotFound(err.Error())
	case errors.Is(err, workplace.ErrStale):
		return huma.Error412PreconditionFailed(err.Error())
	case errors.Is(err, workplace.ErrConflict), errors.Is(err, workplace.ErrProtected), errors.Is(err, workplace.ErrBlocked):
		return huma.Error409Conflict(err.Error())
	case errors.Is(err, workplace.ErrArtifactTooLarge):
		return huma.Error413RequestEntityTooLarge(err.Error())
	}
	return nil
}

// identityProblem maps the errors of the identity service; nil for any other error. Messages
// never repeat the input: no username, e-mail address or password reaches a Problem.
func identityProblem(err error) error {
	var weak *identity.PasswordError
	switch {
	case errors.As(err, &weak):
		details := make([]error, 0, len(weak.Unmet))
		for _, rule := range weak.Unmet {
			details = append(details, &huma.ErrorDetail{Location: "body.password", Message: "the password needs " + rule})
		}
		return huma.Error422UnprocessableEntity("the password does not meet the rules", details...)
	case errors.Is(err, identity.ErrInvalidUsername):
		return BodyInvalid("username", "1 to 64 characters without control characters or surrounding spaces")
	case errors.Is(err, identity.ErrUnknownRole):
		return BodyInvalid("role", "Owner, Admin, Member or Viewer")
	case errors.Is(err, identity.ErrInvalidWorkspaceName):
		return BodyInvalid("name", "a DNS label (lowercase letters, digits and -, at most 63 characters) not starting with kube- or platform-tenant- and other than platform-instance")
	case errors.Is(err, identity.ErrInvalidDisplayName):
		return BodyInvalid("displayName", "1 to 128 characters without control characters or surrounding spaces")
	case errors.Is(err, identity.ErrInvalidTheme):
		return BodyInvalid("theme", "System, Light or Dark")
	case errors.Is(err, identity.ErrInvalidStatus):
		return BodyInvalid("status", "Active or Disabled")
	case errors.Is(err, identity.ErrSelfRevocation):
		return huma.Error422UnprocessableEntity("a Platform administrator cannot revoke its own grant; another administrator must")
	case errors.Is(err, identity.ErrSelfDisable):
		return huma.Error422UnprocessableEntity("a Platform administrator cannot disable its own account; another administrator must")
	case errors.Is(err, identity.ErrLastAdministrator):
		return huma.Error409Conflict("the last active Platform administrator cannot be revoked or disabled; grant a successor first")
	case errors.Is(err, identity.ErrPrincipalDisabled):
		return huma.Error409Conflict("the principal is disabled; enable it before granting")
	case errors.Is(err, identity.ErrLastOwner):
		return huma.Error409Conflict("the final effective Owner of the workspace cannot be demoted or removed; make another principal Owner first")
	case errors.Is(err, identity.ErrUsernameTaken):
		return huma.Error409Conflict("the username is taken")
	case errors.Is(err, identity.ErrWorkspaceNameTaken):
		return huma.Error409Conflict("a workspace of that name exists")
	case errors.Is(err, identity.ErrNotPlatformAdministrator):
		return huma.Error403Forbidden("not permitted: platform administrator required")
	case errors.Is(err, identity.ErrRoleAboveCaller):
		return huma.Error403Forbidden("not permitted: the caller may set, change or remove only roles whose permissions it holds in the workspace")
	case errors.Is(err, identity.ErrProvisioningFailed):
		return Unavailable("the workspace could not be provisioned; nothing was created, retry", err)
	case errors.Is(err, identity.ErrNotFound):
		return huma.Error404NotFound("account not found")
	case errors.Is(err, identity.ErrPrincipalNotFound):
		return huma.Error404NotFound("principal not found")
	case errors.Is(err, identity.ErrGrantNotFound):
		return huma.Error404NotFound("the principal holds no Platform administrator grant")
	case errors.Is(err, identity.ErrMembershipNotFound):
		return huma.Error404NotFound("the principal has no membership in the workspace")
	case errors.Is(err, identity.ErrWorkspaceNotFound):
		return huma.Error404NotFound("workspace not found")
	case errors.Is(err, identity.ErrTenantNotFound):
		return huma.Error404NotFound("tenant not found")
	}
	return nil
}

func BodyInvalid(field, rule string) error {
	return huma.Error422UnprocessableEntity("the request body is invalid", &huma.ErrorDetail{Location: "body." + field, Message: rule})
}

// invalid keeps every field path the kube API reported, so a caller can point at the input.
func invalid(status metav1.Status) error {
	var details []error
	if status.Details != nil {
		for _, cause := range status.Details.Causes {
			location := cause.Field
			if location != "" && !strings.HasPrefix(location, "body.") {
				location = "body." + location
			}
			details = append(details, &huma.ErrorDetail{Message: cause.Message, Location: location})
		}
	}
	msg := fmt.Sprintf("%s is invalid", describe(status.Details))
	if len(details) == 0 && status.Message != "" {
		msg = status.Message
	}
	return huma.Error422UnprocessableEntity(msg, details...)
}

// FieldErrors turns validation of a request into Problem Details with the same paths.
func FieldErrors(errs field.ErrorList) error {
	details := make([]error, 0, len(errs))
	for _, e := range errs {
		details = append(details, &huma.ErrorDetail{Message: e.ErrorBody(), Location: "body." + e.Field})
	}
	return huma.Error422UnprocessableEntity("the request body is invalid", details...)
}

func describe(details *metav1.StatusDetails) string {
	if details == nil || details.Name == "" {
		return "the resource"
	}
	kind := details.Kind
	if kind == "" {
		kind = details.Group
	}
	return fmt.Sprintf("%s %q", strings.TrimSuffix(kind, "s"), details.Name)
}

// notFoundHandler answers unknown routes with Problem Details instead of text/plain.
// noRoute answers a path under /api/ that no route takes: 405 naming the allowed methods when
// the path has routes for other methods (the catch-all of /api/ hides the mux's own 405), else
// 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if method == r.Method {
			continue
		}
		other := r.Clone(r.Context())
		other.Method = method
		if _, pattern := s.mux.Handler(other); pattern != "" && pattern != "/api/" {
			allowed = append(allowed, method)
		}
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		WriteProblem(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s is not allowed; allowed: %s", r.Method, r.URL.Path, strings.Join(allowed, ", ")))
		return
	}
	WriteProblem(w, http.StatusNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
}

// WriteProblem answers Problem Details with status and detail.
func WriteProblem(w http.ResponseWriter, status int, detail string) {
	body, _ := json.Marshal(struct {
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}{http.StatusText(status), status, detail})
	w.Header().Del("X-Content-Type-Options")
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// huma's validation errors echo the offending value, and a body that is not JSON whole; that
// value can be a password or a token. Problem Details of this API name the field, never the value.
func init() {
	withValues := huma.NewError
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		err := withValues(status, msg, errs...)
		if model, ok := err.(*huma.ErrorModel); ok {
			for _, detail := range model.Errors {
				if detail != nil {
					detail.Value = nil
				}
			}
		}
		return err
	}
}

// CodedProblem is Problem Details with a stable code beside the detail: the detail is written for
// people and may change, the code is what clients branch on. Headers (Retry-After) are sent with
// it.
type CodedProblem struct {
	*huma.ErrorModel
	Code    string `json:"code"`
	headers http.Header
}

// NewCodedProblem is the Problem Details of status with a stable code.
func NewCodedProblem(status int, code, detail string, headers http.Header) *CodedProblem {
	return &CodedProblem{ErrorModel: &huma.ErrorModel{Title: http.StatusText(status), Status: status, Detail: detail}, Code: code, headers: headers}
}

// GetHeaders are the headers of the answer (huma.HeadersError).
func (p *CodedProblem) GetHeaders() http.Header { return p.headers }

// Write answers p from a plain net/http handler or a middleware.
func (p *CodedProblem) Write(w http.ResponseWriter) {
	for k, values := range p.headers {
		for _, v := range values {
			w.Header().Add(k, v)
		}
	}
	body, _ := json.Marshal(p)
	w.Header().Del("X-Content-Type-Options")
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
}
