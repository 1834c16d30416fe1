package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"platform.dev/platform/apiserver/work"
)

// problem turns an error from the kube API or the domain into Problem Details (RFC 9457); it is
// the one place that does. Errors that are already huma status errors pass through.
func problem(err error) error {
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
	var kube apierrors.APIStatus
	if !errors.As(err, &kube) {
		return huma.Error500InternalServerError("internal error")
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
		return huma.Error403Forbidden(status.Message)
	case apierrors.IsUnauthorized(err):
		return huma.Error401Unauthorized("authentication required")
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), apierrors.IsTooManyRequests(err):
		return huma.Error503ServiceUnavailable("the management store is busy; retry")
	}
	return huma.Error500InternalServerError("internal error")
}

// workProblem maps the Work store's errors; nil for any other error. Their messages are written
// for people and hold no token, prompt or answer.
func workProblem(err error) error {
	switch {
	case errors.Is(err, work.ErrNotFound):
		return huma.Error404NotFound(err.Error())
	case errors.Is(err, work.ErrInvalidToken), errors.Is(err, work.ErrInvalidInput):
		return huma.Error400BadRequest(err.Error())
	case errors.Is(err, work.ErrConflict):
		return huma.Error409Conflict(err.Error())
	case errors.Is(err, work.ErrStale):
		return huma.Error412PreconditionFailed(err.Error())
	}
	return nil
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

// fieldErrors turns validation of a request into Problem Details with the same paths.
func fieldErrors(errs field.ErrorList) error {
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
func notFoundHandler(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, http.StatusNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
}

func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"title":%q,"status":%d,"detail":%q}`, http.StatusText(status), status, detail)
}
