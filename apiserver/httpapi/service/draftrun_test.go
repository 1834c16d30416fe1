package service_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

func TestADraftRunKeepsTheExactDraftRevisionItWasSubmittedAgainst(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		ws := routingWorkspace(t)
		in := func(method, path, body string) response {
			return call(t, server, method, path, body, httpapi.WorkspaceHeader, ws)
		}
		workspaceAgent(t, server, ws, "asker", `@requestChoice Pick\n@option a A`, "")
		workspaceAgent(t, server, ws, "other", `@respond other`, "")
		// Never published: only a Draft Run can execute it.
		g.Expect(in(http.MethodPost, "/api/flows", directFlowBody("drafted", "asker", "Draft")).status).To(Equal(http.StatusCreated))
		flow := &platformv1.Flow{}
		g.Expect(kube.Get(context.Background(), client.ObjectKey{Namespace: ws, Name: "drafted"}, flow)).To(Succeed())

		r := in(http.MethodPost, "/api/work/workitems?waitSeconds=10", `{"type":"t","title":"T","instruction":"x","flowReference":{"name":"drafted","draft":true}}`)
		g.Expect(r.status).To(Equal(http.StatusAccepted), "%v", r.body)
		g.Expect(field(r.body, "flowRun", "state")).To(Equal("ActionRequired"), "%v", r.body)
		g.Expect(field(r.body, "workItem", "flowReference")).To(Equal(map[string]any{"name": "drafted", "draft": true}))
		runFlow := field(r.body, "flowRun", "flow").(map[string]any)
		g.Expect(runFlow).To(And(HaveKeyWithValue("draft", true), HaveKeyWithValue("revision", flow.ResourceVersion),
			HaveKeyWithValue("generation", BeNumerically("==", flow.Generation)), HaveKeyWithValue("digest", HavePrefix("sha256:"))))
		g.Expect(runFlow).NotTo(HaveKey("version"))

		// An edit of the draft makes a new revision; the run keeps its own and still waits on the
		// agent of its snapshot.
		flow.Definition.Target.ID = "other"
		g.Expect(kube.Update(context.Background(), flow)).To(Succeed())
		runID := field(r.body, "flowRun", "id").(string)
		read := in(http.MethodGet, "/api/flowRuns/"+runID, "")
		g.Expect(read.body["flow"]).To(Equal(runFlow))
		g.Expect(field(read.body, "agents")).To(ConsistOf(HaveKeyWithValue("name", "asker")))

		expectProblem(g, in(http.MethodPost, "/api/work/workitems", `{"type":"t","title":"T","instruction":"x","flowReference":{"name":"drafted","draft":true,"version":"1.0.0"}}`),
			http.StatusUnprocessableEntity)
		expectProblem(g, in(http.MethodPost, "/api/work/workitems", `{"type":"t","title":"T","instruction":"x","flowReference":{"name":"missing","draft":true}}`),
			http.StatusUnprocessableEntity)
	})
}

func TestEveryRecordCarriesTheCorrelationChain(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		ws := routingWorkspace(t)
		in := func(method, path, body string) response {
			return call(t, server, method, path, body, httpapi.WorkspaceHeader, ws)
		}
		workspaceAgent(t, server, ws, "answerer", `@respond done`, "")
		g.Expect(in(http.MethodPost, "/api/flows", directFlowBody("answer", "answerer", "Answer")).status).To(Equal(http.StatusCreated))
		r := in(http.MethodPost, "/api/work/workitems?waitSeconds=10", `{"type":"t","title":"T","instruction":"x","flowReference":{"name":"answer","draft":true}}`)
		g.Expect(field(r.body, "flowRun", "state")).To(Equal("Completed"), "%v", r.body)
		itemID, runID := field(r.body, "workItem", "id").(string), field(r.body, "flowRun", "id").(string)
		chain := map[string]any{"workTaskId": itemID, "workExecutionId": itemID, "flowRunId": runID}

		g.Expect(field(r.body, "workItem", "correlation")).To(Equal(chain), "a WorkItem without an anchor Task is its own Task")
		g.Expect(field(r.body, "flowRun", "correlation")).To(Equal(chain))
		g.Expect(field(in(http.MethodGet, "/api/work/workitems/"+itemID, "").body, "correlation")).To(Equal(chain))

		events := in(http.MethodGet, "/api/flowRuns/"+runID+"/events", "")
		items := events.body["items"].([]any)
		g.Expect(items).NotTo(BeEmpty())
		agentEvents := 0
		for _, e := range items {
			c := e.(map[string]any)["correlation"].(map[string]any)
			g.Expect(c).To(And(HaveKeyWithValue("workTaskId", itemID), HaveKeyWithValue("workExecutionId", itemID), HaveKeyWithValue("flowRunId", runID)))
			if id, ok := c["runtimeExecutionId"].(string); ok {
				agentEvents++
				g.Expect(strings.HasPrefix(id, runID+"/")).To(BeTrue(), "an Agent step attempt is named by its idempotency key: %s", id)
			}
		}
		g.Expect(agentEvents).To(Equal(2), "the Agent step's start and completion name its runtime execution")

		rt := in(http.MethodPost, "/api/runtime/runs", runtimeRunBody(string(agentUID(t, ws, "answerer")), ""))
		g.Expect(rt.status).To(Equal(http.StatusAccepted), "%v", rt.body)
		g.Expect(rt.body["correlation"]).To(Equal(map[string]any{"runtimeExecutionId": rt.body["id"]}))
	})
}

func agentUID(t *testing.T, ws, name string) string {
	t.Helper()
	a := &platformv1.Agent{}
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ws, Name: name}, a); err != nil {
		t.Fatal(err)
	}
	return string(a.UID)
}
