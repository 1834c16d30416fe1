// Package limits is the Limits area of the service API: what a workspace's rate limits are and how
// often they refused its requests lately, for the Console.
package limits

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/ratelimit"
)

const tagLimits = "Limits"

// WorkspaceLimits are a workspace's limits and its recent refusals.
type WorkspaceLimits struct {
	ratelimit.Limits
	Recent Recent `json:"recent" doc:"The requests of the workspace refused with 429 lately"`
}

// Recent counts the refusals of a recent window.
type Recent struct {
	WindowMinutes int        `json:"windowMinutes" doc:"The window counted, in minutes, up to now"`
	Refused       int64      `json:"refused" doc:"Requests answered 429 in the window, every limit and caller together"`
	LastRefusedAt *time.Time `json:"lastRefusedAt,omitempty" doc:"The minute of the latest refusal, when there was one"`
}

// Routes registers the limits of a workspace.
func Routes(s *httpapi.Server) {
	s.AddTags(&huma.Tag{Name: tagLimits, Description: "Limits: requests per second and runs started per minute, per workspace and per access token."})
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-workspace-limits", Method: http.MethodGet, Path: "/api/workspaces/{workspace}/limits", Tags: []string{tagLimits},
		Summary: "Read the rate limits of a workspace and how often they refused requests in the last hour",
		Description: "The instance's defaults (Platform:Limits:RequestsPerSecond, RunsPerMinute, TokenRequestsPerSecond, " +
			"TokenRunsPerMinute) with what the workspace's namespace annotations set (platform/requests-per-second, " +
			"platform/runs-per-minute, platform/token-requests-per-second, platform/token-runs-per-minute); 0 is no limit. " +
			"A request past a limit is answered 429 Problem Details with code RateLimited, the limit, and Retry-After in seconds. " +
			"The counts live in the store, so every replica on one database counts the same.",
	}, httpapi.PolicyWorkspaceReader), func(ctx context.Context, in *struct {
		Workspace string `path:"workspace" maxLength:"128" doc:"Workspace id or route name"`
	}) (*struct{ Body WorkspaceLimits }, error) {
		rc, _ := httpapi.RequestContextFrom(ctx)
		out := WorkspaceLimits{Limits: s.LimitsOf(rc), Recent: Recent{WindowMinutes: int(ratelimit.RecentWindow / time.Minute)}}
		if counter := s.RateLimits(); counter != nil {
			n, last, err := counter.Recent(ctx, rc.WorkspaceID)
			if err != nil {
				return nil, httpapi.Problem(err)
			}
			out.Recent.Refused = n
			if !last.IsZero() {
				out.Recent.LastRefusedAt = &last
			}
		}
		return &struct{ Body WorkspaceLimits }{Body: out}, nil
	})
}
