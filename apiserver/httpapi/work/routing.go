package work

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/work"
)

// routingOrigin is the origin of the Runtime Runs that routing creates, so that they can be told
// apart from the ones created with POST /api/runtime/runs.
const routingOrigin = "routing"

// RoutingInvocation is the body of POST /api/routing/invoke.
type RoutingInvocation struct {
	Input string `json:"input" minLength:"1" maxLength:"65536" doc:"The request; the routed agent receives it as one user message"`
}

func (s *routes) registerRouting() {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "invoke-routing", Method: http.MethodPost, Path: "/api/routing/invoke", Tags: []string{tagRouting},
		Summary: "Route a request to the one ready agent of the workspace and execute it", DefaultStatus: http.StatusAccepted,
		Description: "An agent is ready when its Ready condition is True for its current generation. Exactly one agent of the " +
			"workspace must be ready: none, or several, is 409 naming how many qualify, and nothing is recorded. The execution " +
			"is a Runtime Run (origin routing), answered with 202 and processed asynchronously; read it with GET " +
			"/api/runtime/runs/{id}. With waitSeconds, the answer waits for the run to end.",
		Errors: []int{http.StatusConflict},
	}, httpapi.PolicyRunsExecute), func(ctx context.Context, in *struct {
		httpapi.WorkspaceInput
		WaitInput
		Body RoutingInvocation
	}) (*runtimeRunOutput, error) {
		rc, err := s.workContext(ctx)
		if err != nil {
			return nil, err
		}
		agents := &platformv1.AgentList{}
		if err := s.Kube().List(ctx, agents, client.InNamespace(rc.Namespace)); err != nil {
			return nil, httpapi.Problem(err)
		}
		var ready []*platformv1.Agent
		for i := range agents.Items {
			if ok, _ := httpapi.AgentReadiness(&agents.Items[i]); ok {
				ready = append(ready, &agents.Items[i])
			}
		}
		switch len(ready) {
		case 0:
			return nil, huma.Error409Conflict(fmt.Sprintf("no agent of the workspace is ready (%d agents, none Ready for its current generation); "+
				"routing needs exactly one", len(agents.Items)))
		case 1:
		default:
			names := make([]string, 0, len(ready))
			for _, a := range ready {
				names = append(names, a.Name)
			}
			sort.Strings(names)
			return nil, huma.Error409Conflict(fmt.Sprintf("%d agents of the workspace are ready (%s); routing needs exactly one",
				len(ready), strings.Join(names, ", ")))
		}
		agent := ready[0]
		run, err := s.Work().CreateRuntimeRun(ctx, domain.RuntimeRun{Context: rc, AgentName: agent.Name, AgentUID: string(agent.UID),
			// The routed revision is pinned: a later edit of the agent fails the run instead of
			// silently executing a definition that routing did not choose.
			AgentVersion: strconv.FormatInt(agent.Generation, 10),
			Messages:     []domain.Message{{Role: "user", Content: in.Body.Input}}, Mode: "async", Origin: routingOrigin})
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		s.Log().Info("request routed", "agent", agent.Name, "runtimeRunId", run.ID, "workspaceId", rc.WorkspaceID)
		s.wakeExecutor()
		if run, err = s.waitForRuntimeRun(ctx, rc.WorkspaceID, run, in.WaitSeconds); err != nil {
			return nil, err
		}
		return &runtimeRunOutput{Status: http.StatusAccepted, ETag: httpapi.ETag(strconv.FormatInt(run.Version, 10)), Body: runtimeRunOf(run)}, nil
	})
}

// waitForRuntimeRun polls the run until it is Completed or Failed, for up to seconds.
func (s *routes) waitForRuntimeRun(ctx context.Context, workspaceID string, run domain.RuntimeRun, seconds int) (domain.RuntimeRun, error) {
	if seconds <= 0 {
		return run, nil
	}
	deadline := time.Now().Add(time.Duration(min(seconds, maxWaitSeconds)) * time.Second)
	pause := time.Millisecond
	for (run.Status == domain.RuntimePending || run.Status == domain.RuntimeRunning) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return run, nil
		case <-time.After(pause):
		}
		pause = min(2*pause, 50*time.Millisecond)
		next, err := s.Work().RuntimeRun(ctx, workspaceID, run.ID)
		if err != nil {
			return run, httpapi.Problem(err)
		}
		run = next
	}
	return run, nil
}
