package kubeauth

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/request"

	"platform.dev/platform/apiserver/ratelimit"
	"platform.dev/platform/internal/resourcenamespace"
)

// Limits holds the kube API's requests in a workspace's namespaces (and its resource
// namespaces) to the rate limits of the workspace and of the caller's personal access token,
// counted with the service API's: one counter per workspace and per token, whichever surface the
// requests arrive on. A request past a limit is answered 429 with a Status of reason
// TooManyRequests and Retry-After, which kubectl and client-go wait for and retry.
type Limits struct {
	Counter *ratelimit.Counter
	// Defaults are the instance's limits; a workspace namespace's annotations override them.
	Defaults   ratelimit.Limits
	Authorizer *Authorizer
}

// Authorized wraps the handler of authenticated and authorized requests: it counts the requests
// of the Principals this package authenticated in a workspace's namespaces. Administrators'
// certificates and the control plane's own clients are not limited. A store that cannot count
// lets the request through.
func (l *Limits) Authorized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := request.UserFrom(r.Context())
		c, ok := callerOf(u)
		info, _ := request.RequestInfoFrom(r.Context())
		if !ok || info == nil || info.Namespace == "" || l.Counter == nil {
			next.ServeHTTP(w, r)
			return
		}
		workspace, err := l.Authorizer.workspaceNamespace(r.Context(), info.Namespace)
		if err != nil || workspace == nil {
			next.ServeHTTP(w, r)
			return
		}
		wsID := workspace.Annotations[resourcenamespace.WorkspaceIDAnnotation]
		if wsID == "" {
			next.ServeHTTP(w, r)
			return
		}
		var token string
		if c.pat {
			token = tokenOf(u)
		}
		refusal, err := l.Counter.Take(r.Context(), wsID, token, ratelimit.Override(l.Defaults, workspace.Annotations), startsNoRun)
		if err != nil || refusal == nil {
			next.ServeHTTP(w, r)
			return
		}
		if token != "" {
			if raw, ok := bearer(r); ok {
				l.Counter.RememberBearer(sha256.Sum256([]byte(raw)), c.patWorkspaceID, token)
			}
		}
		writeTooManyRequests(w, refusal)
	})
}

// Unauthenticated wraps the whole handler chain: a personal access token refused lately whose
// window is still full is refused again before its authentication, at no cost to the store.
func (l *Limits) Unauthenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.Counter != nil && l.Counter.RemembersBearers() {
			if raw, ok := bearer(r); ok {
				if refusal := l.Counter.BearerRefused(sha256.Sum256([]byte(raw)), startsNoRun); refusal != nil {
					writeTooManyRequests(w, refusal)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// startsNoRun: no request of the kube API starts a run. The Work group refuses to create a
// WorkItem or a FlowRun (work is submitted through the service API), so such a create counts as
// a request, not against the runs-per-minute limits it would not use.
const startsNoRun = false

// ExtraTokenID carries the id of the personal access token a user authenticated with.
const ExtraTokenID = "platform.dev/pat-id"

func tokenOf(u interface{ GetExtra() map[string][]string }) string {
	if ids := u.GetExtra()[ExtraTokenID]; len(ids) == 1 {
		return ids[0]
	}
	return ""
}

// bearer is the token of the request's Authorization: Bearer header.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// writeTooManyRequests answers the kube API's 429: a Status of reason TooManyRequests whose
// details carry retryAfterSeconds, and the Retry-After header.
func writeTooManyRequests(w http.ResponseWriter, refusal *ratelimit.Refusal) {
	seconds := refusal.RetryAfterSeconds()
	status := apierrors.NewTooManyRequests(refusal.Detail(), seconds).ErrStatus
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	body, _ := json.Marshal(status)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", strconv.Itoa(seconds))
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(body)
}
