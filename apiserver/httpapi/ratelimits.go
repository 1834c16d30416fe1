package httpapi

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/ratelimit"
	"platform.dev/platform/internal/config"
)

// The settings of the instance's default limits (0, the default, is no limit); a workspace's
// namespace annotations (ratelimit.Annotations) override them.
const (
	LimitsRequestsPerSecondSetting      = "Platform:Limits:RequestsPerSecond"
	LimitsRunsPerMinuteSetting          = "Platform:Limits:RunsPerMinute"
	LimitsTokenRequestsPerSecondSetting = "Platform:Limits:TokenRequestsPerSecond"
	LimitsTokenRunsPerMinuteSetting     = "Platform:Limits:TokenRunsPerMinute"
)

// RateLimitedCode is the stable code of the 429 of a rate limit.
const RateLimitedCode = "RateLimited"

// runStartingOperations start a run: they count against the runs-per-minute limits too. A
// family's variants (-in-namespace) start runs as their base operation does.
var runStartingOperations = []string{"open-interaction", "send-interaction-message", "submit-work-item", "create-runtime-run", "run-trigger"}

func startsRun(operationID string) bool {
	for _, id := range runStartingOperations {
		if operationID == id || strings.HasPrefix(operationID, id+"-in-") {
			return true
		}
	}
	return false
}

// LimitDefaults reads the instance's default limits (the kube API applies them too).
func LimitDefaults(cfg *config.Config) (ratelimit.Limits, error) { return limitDefaultsFrom(cfg) }

// limitDefaultsFrom reads the instance's default limits.
func limitDefaultsFrom(cfg *config.Config) (ratelimit.Limits, error) {
	var out ratelimit.Limits
	for key, field := range map[string]*int{
		LimitsRequestsPerSecondSetting:      &out.RequestsPerSecond,
		LimitsRunsPerMinuteSetting:          &out.RunsPerMinute,
		LimitsTokenRequestsPerSecondSetting: &out.TokenRequestsPerSecond,
		LimitsTokenRunsPerMinuteSetting:     &out.TokenRunsPerMinute,
	} {
		n, err := ratelimit.ParseLimit(cfg.GetOr(key, "0"))
		if err != nil {
			return out, fmt.Errorf("%s: %w", key, err)
		}
		*field = n
	}
	return out, nil
}

// LimitsOf are the limits of the request's workspace: the instance's defaults with what its
// namespace's annotations set.
func (s *Server) LimitsOf(rc RequestContext) ratelimit.Limits {
	return ratelimit.Override(s.limitDefaults, rc.annotations)
}

// RateLimits is the store's counter of the limits; nil when the server counts none.
func (s *Server) RateLimits() *ratelimit.Counter { return s.rateLimits }

// limit counts a workspace-scoped request against the limits of its workspace and of its
// personal access token once authorize resolved them, before its handler does any work: a caller
// past a limit is answered 429 with Retry-After, from the replica's memory (ratelimit.Counter
// leases the store's count in batches), and another workspace's requests count on other rows. A
// store that cannot count lets the request through: the limits protect the service, they must
// not be what takes it down.
func (s *Server) limit(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		rc, ok := RequestContextFrom(ctx.Context())
		if !ok || s.rateLimits == nil {
			next(ctx)
			return
		}
		var token string
		caller, _ := CallerFrom(ctx.Context())
		if caller.PAT != nil {
			token = caller.PAT.TokenID
		}
		refusal, err := s.rateLimits.Take(ctx.Context(), rc.WorkspaceID, token, s.LimitsOf(rc), startsRun(ctx.Operation().OperationID))
		if err != nil {
			s.log.Error(err, "rate limits not counted", "workspace", rc.WorkspaceID)
		}
		if refusal == nil {
			// A token refused lately has its admitted requests spread over the window rather
			// than run at once, when they would take every core from other workspaces.
			if s.pacer.Wait(ctx.Context(), token) != nil {
				return // the caller went away while waiting: nobody reads an answer
			}
			next(ctx)
			return
		}
		if caller.PAT != nil {
			if raw, ok := bearerToken(ctx.Header("Authorization")); ok {
				s.rateLimits.RememberBearer(digestOf(raw), caller.PAT.WorkspaceID, caller.PAT.TokenID)
			}
			s.pacer.Refused(token, refusal)
		}
		writeRefusal(ctx, refusal)
	}
}

// limitBearer refuses, before authentication, a request of a personal access token that was
// refused lately and whose window this replica saw full: a flooding token costs no
// authentication, no workspace resolution, no permission check and no store access.
func (s *Server) limitBearer(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		if s.rateLimits != nil && s.rateLimits.RemembersBearers() {
			if raw, ok := bearerToken(ctx.Header("Authorization")); ok {
				if refusal := s.rateLimits.BearerRefused(digestOf(raw), startsRun(ctx.Operation().OperationID)); refusal != nil {
					writeRefusal(ctx, refusal)
					return
				}
			}
		}
		next(ctx)
	}
}

// refuseRemembered answers, before anything else (the payload capture, routing, the cross-origin
// check, authentication, the store), a request of the service API or /mcp whose personal access
// token was refused lately and whose window of requests this replica saw full: a flooding token's
// refusals cost a lookup in memory and a 429 written before, and no lock another workspace's
// requests wait for. The runs-per-minute windows, which depend on the operation, are checked by
// limitBearer once the route is known.
func (s *Server) refuseRemembered(next http.Handler) http.Handler {
	if s.rateLimits == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.rateLimits.RemembersBearers() && (strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/mcp") {
			if raw, ok := bearerToken(r.Header.Get("Authorization")); ok {
				if refusal, refused := s.rateLimits.BearerRefusal(digestOf(raw), false); refused {
					answer := refusalAnswerOf(&refusal)
					h := w.Header()
					h["Retry-After"], h["Content-Type"] = answer.retryAfter, problemJSON
					w.WriteHeader(http.StatusTooManyRequests)
					_, _ = w.Write(answer.body)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// digestOf is the SHA-256 digest of a credential, copied on the stack when it is short enough
// (an access token is): digesting allocates nothing.
func digestOf(raw string) [32]byte {
	var buf [128]byte
	if len(raw) <= len(buf) {
		return sha256.Sum256(append(buf[:0], raw...))
	}
	return sha256.Sum256([]byte(raw))
}

// problemJSON is the Content-Type of a refusal, shared by every answer (never modified).
var problemJSON = []string{"application/problem+json"}

// refusalAnswer is a 429 ready to write: its body and its Retry-After header's value (shared by
// the answers that write it, never modified).
type refusalAnswer struct {
	body       []byte
	retryAfter []string
}

// refusalAnswers are the 429 answers already built, by limit, value and Retry-After: a flood's
// refusals are answered without building them again. Bounded: past maxRefusalAnswers kinds, an
// answer is built each time.
var (
	refusalAnswersMu sync.RWMutex
	refusalAnswers   = map[refusalKey]*refusalAnswer{}
)

const maxRefusalAnswers = 1024

type refusalKey struct {
	limit          string
	allowed, after int
}

// refusalAnswerOf is the answer of a refusal: Problem Details with the limit.
func refusalAnswerOf(refusal *ratelimit.Refusal) *refusalAnswer {
	key := refusalKey{refusal.Limit, refusal.Allowed, refusal.RetryAfterSeconds()}
	refusalAnswersMu.RLock()
	answer, ok := refusalAnswers[key]
	refusalAnswersMu.RUnlock()
	if ok {
		return answer
	}
	p := NewCodedProblem(http.StatusTooManyRequests, RateLimitedCode, refusal.Detail(), nil)
	body, _ := json.Marshal(struct {
		*CodedProblem
		Limit string `json:"limit"`
	}{p, refusal.Limit})
	answer = &refusalAnswer{body: body, retryAfter: []string{strconv.Itoa(key.after)}}
	refusalAnswersMu.Lock()
	if len(refusalAnswers) < maxRefusalAnswers {
		refusalAnswers[key] = answer
	}
	refusalAnswersMu.Unlock()
	return answer
}

// writeRefusal answers 429 Problem Details with the limit and Retry-After.
func writeRefusal(ctx huma.Context, refusal *ratelimit.Refusal) {
	answer := refusalAnswerOf(refusal)
	ctx.SetHeader("Retry-After", answer.retryAfter[0])
	ctx.SetHeader("Content-Type", problemJSON[0])
	ctx.SetStatus(http.StatusTooManyRequests)
	_, _ = ctx.BodyWriter().Write(answer.body)
}
