package service_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// routingWorkspace is a fresh workspace (namespace) of its own, so that the agents a case makes
// are the only candidates of routing.
func routingWorkspace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "routing-"}}
	if err := kube.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), ns) })
	return ns.Name
}

// workspaceAgent creates an agent in workspace and, when ready is set, reports its Ready
// condition as its reconciler would (no controller runs in these tests).
func workspaceAgent(t *testing.T, server *httptest.Server, workspace, name, instructions string, ready metav1.ConditionStatus) *platformv1.Agent {
	t.Helper()
	r := call(t, server, http.MethodPost, "/api/agents", `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"`+name+`"},`+
		`"definition":{"instructions":"`+instructions+`"}}`, httpapi.WorkspaceHeader, workspace)
	if r.status != http.StatusCreated {
		t.Fatalf("create agent %s: %d %v", name, r.status, r.body)
	}
	agent := &platformv1.Agent{}
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: workspace, Name: name}, agent); err != nil {
		t.Fatal(err)
	}
	if ready != "" {
		setAgentReady(t, agent, ready, agent.Generation)
	}
	return agent
}

func setAgentReady(t *testing.T, agent *platformv1.Agent, status metav1.ConditionStatus, generation int64) {
	t.Helper()
	agent.Status.ObservedGeneration = generation
	agent.Status.Provisioning = platformv1.ProvisioningState("Provisioned")
	meta.SetStatusCondition(&agent.Status.Conditions, metav1.Condition{Type: platformv1.ReadyCondition, Status: status,
		ObservedGeneration: generation, Reason: "Resolved", Message: "test"})
	if err := kube.Status().Update(context.Background(), agent); err != nil {
		t.Fatal(err)
	}
}

func TestRoutingExecutesTheOneReadyAgentOfTheWorkspaceAsARuntimeRun(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		ws := routingWorkspace(t)
		workspaceAgent(t, server, ws, "not-ready", `@respond no`, metav1.ConditionFalse)
		workspaceAgent(t, server, ws, "unreported", `@respond no`, "")
		ready := workspaceAgent(t, server, ws, "answerer", `@respond Hello {{input}}`, metav1.ConditionTrue)
		// A ready agent of another workspace is no candidate.
		workspaceAgent(t, server, routingWorkspace(t), "elsewhere", `@respond no`, metav1.ConditionTrue)

		r := call(t, server, http.MethodPost, "/api/routing/invoke?waitSeconds=10", `{"input":"world"}`, httpapi.WorkspaceHeader, ws)
		g.Expect(r.status).To(Equal(http.StatusAccepted), "%v", r.body)
		g.Expect(r.header.Get("ETag")).NotTo(BeEmpty())
		g.Expect(r.body["status"]).To(Equal("Completed"), "%v", r.body)
		g.Expect(r.body["origin"]).To(Equal("routing"))
		g.Expect(r.body["agent"]).To(Equal(map[string]any{"resourceId": string(ready.UID), "name": "answerer",
			"version": fmt.Sprint(ready.Generation)}))
		g.Expect(r.body["response"]).To(Equal(map[string]any{"action": "respond", "content": "Hello world"}))

		read := call(t, server, http.MethodGet, "/api/runtime/runs/"+r.body["id"].(string), "", httpapi.WorkspaceHeader, ws)
		g.Expect(read.status).To(Equal(http.StatusOK), "the routed execution is a Runtime Run of the workspace")
	})
}

func TestRoutingRefusesWhenNoneOrSeveralAgentsAreReady(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		server := workServer(t, s)
		cases := map[string]struct {
			setup  func(t *testing.T, ws string)
			detail string
		}{
			"a workspace without agents": {setup: func(*testing.T, string) {}, detail: "no agent of the workspace is ready"},
			"agents none of which is ready": {setup: func(t *testing.T, ws string) {
				workspaceAgent(t, server, ws, "failing", `@respond no`, metav1.ConditionFalse)
				workspaceAgent(t, server, ws, "unreported", `@respond no`, "")
			}, detail: "no agent of the workspace is ready"},
			"a Ready condition of an earlier generation": {setup: func(t *testing.T, ws string) {
				a := workspaceAgent(t, server, ws, "stale", `@respond no`, "")
				setAgentReady(t, a, metav1.ConditionTrue, a.Generation-1)
			}, detail: "no agent of the workspace is ready"},
			"two ready agents": {setup: func(t *testing.T, ws string) {
				workspaceAgent(t, server, ws, "first", `@respond 1`, metav1.ConditionTrue)
				workspaceAgent(t, server, ws, "second", `@respond 2`, metav1.ConditionTrue)
			}, detail: "2 agents of the workspace are ready (first, second)"},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				ws := routingWorkspace(t)
				tc.setup(t, ws)
				r := call(t, server, http.MethodPost, "/api/routing/invoke", `{"input":"x"}`, httpapi.WorkspaceHeader, ws)
				expectProblem(g, r, http.StatusConflict)
				g.Expect(r.body["detail"]).To(ContainSubstring(tc.detail))
			})
		}
		g := NewWithT(t)
		expectProblem(g, call(t, server, http.MethodPost, "/api/routing/invoke", `{"input":""}`), http.StatusUnprocessableEntity)
		expectProblem(g, call(t, server, http.MethodPost, "/api/routing/invoke", `{}`), http.StatusUnprocessableEntity)
	})
}
