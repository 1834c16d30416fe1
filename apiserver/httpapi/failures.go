package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-logr/logr"

	"platform.dev/platform/apiserver/store"
)

// Every answer of 500 or more is logged once, by answerProblems, with the method, the route
// pattern and its cause: what went wrong is for the operators' log, while the caller reads only
// "internal error". Causes come from the kube API, the stores and the platform's own errors;
// none holds a request body, a token or a secret value.

// failure is where the handling of one request leaves the cause of a 5xx for the log line.
type failure struct{ cause error }

type failureKey struct{}

// noteFailure records the cause of the request's 5xx answer, once: the cause of an Internal
// error, else the error itself.
func noteFailure(ctx context.Context, cause error) {
	var (
		internal    *internalError
		unavailable *unavailableError
	)
	switch {
	case errors.As(cause, &unavailable):
		cause = unavailable.cause
	case errors.As(cause, &internal):
		cause = internal.cause
	}
	if f, ok := ctx.Value(failureKey{}).(*failure); ok && f.cause == nil && cause != nil {
		f.cause = cause
	}
}

// NoteFailure records the cause of a 5xx that a handler writes itself (not through huma), for
// the request's log line.
func NoteFailure(ctx context.Context, cause error) { noteFailure(ctx, cause) }

// internalError is a 5xx whose cause is logged, never answered.
type internalError struct {
	*huma.ErrorModel
	cause error
}

func (e *internalError) Unwrap() error { return e.cause }

// Internal is the answer to an error that the caller can do nothing about: 500 "internal error",
// with err logged as its cause. An error that says the SQL store is unreachable (PostgreSQL
// restarting, a broken connection) is StoreUnavailable instead: retrying will do.
func Internal(err error) huma.StatusError {
	if store.Unreachable(err) {
		return StoreUnavailable(err)
	}
	model, _ := huma.Error500InternalServerError("internal error").(*huma.ErrorModel)
	return &internalError{ErrorModel: model, cause: err}
}

// RetryAfterSeconds is the Retry-After of the answers given while the SQL store is unreachable:
// a restarting PostgreSQL is usually back within a few seconds.
const RetryAfterSeconds = "2"

// unavailableError is a 503 with Retry-After, its cause logged.
type unavailableError struct {
	internalError
}

func (e *unavailableError) GetHeaders() http.Header {
	return http.Header{"Retry-After": []string{RetryAfterSeconds}}
}

// StoreUnavailable is the answer while the SQL store does not answer: 503 with Retry-After, err
// logged as its cause.
func StoreUnavailable(err error) huma.StatusError {
	model, _ := huma.Error503ServiceUnavailable("the database does not answer; retry").(*huma.ErrorModel)
	return &unavailableError{internalError{ErrorModel: model, cause: err}}
}

// Unavailable is a 503 whose detail tells the caller to retry, with err logged as its cause.
func Unavailable(detail string, err error) huma.StatusError {
	model, _ := huma.Error503ServiceUnavailable(detail).(*huma.ErrorModel)
	return &internalError{ErrorModel: model, cause: err}
}

// noteFailures is the API's transformer of answers: it hands the cause of a 5xx (the error of
// Internal, else the Problem's detail) to the log line of the request.
func noteFailures(ctx huma.Context, status string, v any) (any, error) {
	if len(status) != 3 || status[0] != '5' {
		return v, nil
	}
	if err, ok := v.(error); ok {
		noteFailure(ctx.Context(), err)
	}
	return v, nil
}

// init: huma answers an error that a handler returns without a status as 500 with the error's
// text among the details; that text is the log's, not the caller's.
func init() {
	withContext := huma.NewErrorWithContext
	huma.NewErrorWithContext = func(ctx huma.Context, status int, msg string, errs ...error) huma.StatusError {
		if status >= http.StatusInternalServerError && len(errs) > 0 {
			cause := errors.Join(errs...)
			if ctx != nil {
				noteFailure(ctx.Context(), cause)
			}
			errs = nil
			if status == http.StatusInternalServerError && store.Unreachable(cause) {
				if ctx != nil {
					ctx.SetHeader("Retry-After", RetryAfterSeconds)
				}
				return withContext(ctx, http.StatusServiceUnavailable, "the database does not answer; retry")
			}
		}
		return withContext(ctx, status, msg, errs...)
	}
}

// logFailure writes the log line of a request answered with status 500 or more.
func logFailure(log logr.Logger, r *http.Request, status int, f *failure, answer string) {
	cause := f.cause
	if cause == nil {
		cause = errors.New(answer)
	}
	route := r.Pattern
	if route == "" {
		route = "(no route)"
	}
	log.Error(cause, "request failed", "method", r.Method, "route", route, "status", status)
}
