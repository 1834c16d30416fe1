package service_test

import (
	"context"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

func TestADeploymentShowsTheLiveRevisionAndTheInstancesThatRunsInFlightStillHold(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		ws := routingWorkspace(t)
		in := func(method, path, body string, headers ...string) response {
			return call(t, server, method, path, body, append([]string{httpapi.WorkspaceHeader, ws}, headers...)...)
		}
		agent := workspaceAgent(t, server, ws, "asker", `@requestChoice Pick\n@option a A`, metav1.ConditionTrue)
		for _, c := range []struct{ path, body string }{
			{"/api/flows", directFlowBody("ask", "asker", "Ask")},
			{"/api/flows/ask/versions", `{"version":"1.0.0","activate":true}`},
		} {
			r := in(http.MethodPost, c.path, c.body)
			g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)
		}

		idle := in(http.MethodGet, "/api/deployments/asker", "")
		g.Expect(idle.status).To(Equal(http.StatusOK), "%v", idle.body)
		g.Expect(idle.body).To(And(HaveKeyWithValue("ready", true),
			HaveKeyWithValue("live", Equal(map[string]any{"resourceId": string(agent.UID), "version": "1", "revision": agent.ResourceVersion})),
			HaveKeyWithValue("activeRuns", Equal(map[string]any{"runtimeRuns": 0.0, "flowRuns": 0.0}))))

		submitted := in(http.MethodPost, "/api/work/workitems?waitSeconds=10", `{"type":"t","title":"T","instruction":"x","flowReference":{"name":"ask"}}`)
		g.Expect(field(submitted.body, "flowRun", "state")).To(Equal("ActionRequired"), "%v", submitted.body)
		pinned := in(http.MethodGet, "/api/deployments/asker", "")
		live := pinned.body["live"].(map[string]any)["revision"]
		g.Expect(pinned.body["activeRuns"]).To(Equal(map[string]any{"runtimeRuns": 0.0, "flowRuns": 1.0}))
		g.Expect(pinned.body["instances"]).To(Equal([]any{map[string]any{"revision": live, "live": true, "runtimeRuns": 0.0, "flowRuns": 1.0}}))

		// A new generation of the agent is live; the suspended run keeps the revision it pinned,
		// which stays an instance until the run ends. The stale Ready condition no longer counts.
		current := &platformv1.Agent{}
		g.Expect(kube.Get(context.Background(), client.ObjectKey{Namespace: ws, Name: "asker"}, current)).To(Succeed())
		current.Definition.Instructions = "@respond changed"
		g.Expect(kube.Update(context.Background(), current)).To(Succeed())
		changed := in(http.MethodGet, "/api/deployments/asker", "")
		g.Expect(changed.body).To(And(HaveKeyWithValue("ready", false), HaveKeyWithValue("notReadyReason", ContainSubstring("generation")),
			HaveKeyWithValue("live", HaveKeyWithValue("version", "2"))))
		g.Expect(changed.body["instances"]).To(Equal([]any{map[string]any{"revision": live, "live": false, "runtimeRuns": 0.0, "flowRuns": 1.0}}))

		g.Expect(in(http.MethodPost, "/api/flowRuns/"+field(submitted.body, "flowRun", "id").(string)+"/cancel", "").status).To(Equal(http.StatusOK))
		ended := in(http.MethodGet, "/api/deployments/asker", "")
		g.Expect(ended.body["activeRuns"]).To(Equal(map[string]any{"runtimeRuns": 0.0, "flowRuns": 0.0}), "a terminal run holds no instance")
		g.Expect(ended.body["instances"]).To(BeEmpty())

		expectProblem(g, in(http.MethodGet, "/api/deployments/no-such-agent", ""), http.StatusNotFound)
		expectProblem(g, call(t, server, http.MethodGet, "/api/deployments/asker", ""), http.StatusNotFound)
	})
}
