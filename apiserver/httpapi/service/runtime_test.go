package service_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// runtimeAgent creates an agent with instructions and returns its resource id.
func runtimeAgent(t *testing.T, server *httptest.Server, instructions string) string {
	t.Helper()
	name := fmt.Sprintf("rt-%d", time.Now().UnixNano()%1000000000)
	r := call(t, server, http.MethodPost, "/api/agents", `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"`+name+`"},`+
		`"definition":{"instructions":"`+instructions+`"}}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create agent: %d %v", r.status, r.body)
	}
	return field(r.body, "metadata", "uid").(string)
}

func runtimeRunBody(resourceID, extra string) string {
	return `{"agent":{"resourceId":"` + resourceID + `"},"input":{"messages":[{"role":"user","content":"world"}]},` +
		`"execution":{"mode":"async","timeoutSeconds":5},"origin":"test"` + extra + `}`
}

// settledRuntimeRun polls the run until it is Completed or Failed.
func settledRuntimeRun(t *testing.T, server *httptest.Server, id string) response {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(25 * time.Millisecond) {
		r := call(t, server, http.MethodGet, "/api/runtime/runs/"+id, "")
		if r.body["status"] == "Completed" || r.body["status"] == "Failed" {
			return r
		}
	}
	t.Fatalf("runtime run %s did not settle", id)
	return response{}
}

func TestARuntimeRunIsProcessedAsynchronouslyAndReportsProviderModelAndResponse(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		cases := map[string]struct {
			instructions string
			status       string
			response     any
			error        string
			attempt      int
		}{
			"a response": {instructions: `@respond Hello {{input}}`, status: "Completed",
				response: map[string]any{"action": "respond", "content": "Hello world"}, attempt: 1},
			"an agent error fails the run": {instructions: `@showError the archive is offline`, status: "Failed",
				error: "the archive is offline", attempt: 1},
			"a transient failure is retried with backoff": {instructions: `@transientFailures 1\n@respond ok`, status: "Completed",
				response: map[string]any{"action": "respond", "content": "ok"}, attempt: 2},
			"a timeout is retried and then fails the run with a reason": {instructions: `@latencyMs 3000`, status: "Failed",
				error: "did not answer within 1s", attempt: 3},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				id := runtimeAgent(t, server, tc.instructions)
				body := runtimeRunBody(id, "")
				if tc.attempt == 3 {
					body = `{"agent":{"resourceId":"` + id + `"},"input":{"messages":[{"role":"user","content":"x"}]},"execution":{"timeoutSeconds":1}}`
				}
				created := call(t, server, http.MethodPost, "/api/runtime/runs", body)
				g.Expect(created.status).To(Equal(http.StatusAccepted), "%v", created.body)
				g.Expect(created.body["status"]).To(Equal("Pending"))
				run := settledRuntimeRun(t, server, created.body["id"].(string))
				g.Expect(run.body["status"]).To(Equal(tc.status), "%v", run.body)
				g.Expect(run.body["attempt"]).To(BeNumerically("==", tc.attempt))
				if tc.response != nil {
					g.Expect(run.body["response"]).To(Equal(tc.response))
					g.Expect(run.body["modelProvider"]).To(Equal("Deterministic"))
					g.Expect(run.body["resolvedModel"]).To(Equal("deterministic"))
				}
				g.Expect(fmt.Sprint(run.body["error"])).To(ContainSubstring(tc.error))
			})
		}

		id := runtimeAgent(t, server, `@respond hi`)
		expectProblem(g, call(t, server, http.MethodPost, "/api/runtime/runs", runtimeRunBody("no-such-agent", "")), http.StatusUnprocessableEntity)
		expectProblem(g, call(t, server, http.MethodPost, "/api/runtime/runs", runtimeRunBody(id, `,"overrides":{"topP":1}`)), http.StatusUnprocessableEntity)
		g.Expect(call(t, server, http.MethodPost, "/api/runtime/runs", runtimeRunBody(id, `,"overrides":{"temperature":0.2,"maxOutputTokens":64}`)).status).
			To(Equal(http.StatusAccepted), "temperature and maxOutputTokens may be overridden")
	})
}

func TestARuntimeRunIsDeletedOnlyWhenTerminalWithItsCurrentETagAndOnlyInItsWorkspace(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		server := workServer(t, s)
		slow := call(t, server, http.MethodPost, "/api/runtime/runs", runtimeRunBody(runtimeAgent(t, server, `@latencyMs 2000`), ""))
		g.Expect(slow.status).To(Equal(http.StatusAccepted))
		time.Sleep(100 * time.Millisecond)
		running := call(t, server, http.MethodGet, "/api/runtime/runs/"+slow.body["id"].(string), "")
		expectProblem(g, call(t, server, http.MethodDelete, "/api/runtime/runs/"+slow.body["id"].(string), "", "If-Match", running.header.Get("ETag")), http.StatusConflict)

		created := call(t, server, http.MethodPost, "/api/runtime/runs", runtimeRunBody(runtimeAgent(t, server, `@respond hi`), ""))
		path := "/api/runtime/runs/" + created.body["id"].(string)
		done := settledRuntimeRun(t, server, created.body["id"].(string))

		other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "other-"}}
		g.Expect(kube.Create(context.Background(), other)).To(Succeed())
		t.Cleanup(func() { _ = kube.Delete(context.Background(), other) })
		expectProblem(g, call(t, server, http.MethodGet, path, "", httpapi.WorkspaceHeader, other.Name), http.StatusNotFound)
		expectProblem(g, call(t, server, http.MethodDelete, path, "", httpapi.WorkspaceHeader, other.Name, "If-Match", done.header.Get("ETag")), http.StatusNotFound)

		expectProblem(g, call(t, server, http.MethodDelete, path, ""), http.StatusPreconditionRequired)
		expectProblem(g, call(t, server, http.MethodDelete, path, "", "If-Match", created.header.Get("ETag")), http.StatusPreconditionFailed)
		g.Expect(call(t, server, http.MethodDelete, path, "", "If-Match", done.header.Get("ETag")).status).To(Equal(http.StatusNoContent))
		expectProblem(g, call(t, server, http.MethodGet, path, ""), http.StatusNotFound)
	})
}
