package service_test

import (
	"context"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
)

func directFlowBody(name, agent, description string) string {
	return `{"name":"` + name + `","description":"` + description + `","kind":"Direct","version":"1.0.0","enabled":true,` +
		`"definition":{"flowKind":"Direct","target":{"kind":"Agent","id":"` + agent + `"}}}`
}

func orchestrationFlowBody(name, agent string) string {
	return `{"name":"` + name + `","kind":"Orchestration","definition":{"steps":[` +
		`{"name":"in","type":"Input"},{"name":"work","type":"Agent","agent":{"name":"` + agent + `"}},{"name":"out","type":"Output"}],` +
		`"edges":[{"from":"in","to":"work"},{"from":"work","to":"out"}]}}`
}

// publishEntry writes the PublishedEntry that publication of an Entry would write, pinning flow@version.
func publishEntry(t *testing.T, name, flow, version string) {
	t.Helper()
	entry := &platformv1.PublishedEntry{
		ObjectMeta: metav1.ObjectMeta{Namespace: httpapi.DevelopmentWorkspace, Name: name},
		Definition: platformv1.PublishedEntryDefinition{
			OwnerWorkspaceID: httpapi.DevelopmentWorkspace,
			ResolvedTarget:   platformv1.FlowVersionReference{Name: platformv1.ResourceName(flow), Version: platformv1.SemanticVersion(version)},
		},
	}
	// Only the platform writes PublishedEntries.
	if err := platformKube.Create(context.Background(), entry); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = platformKube.Delete(context.Background(), entry) })
}

func TestFlowWritesNeedTheCurrentETag(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)

	created := call(t, server, http.MethodPost, "/api/flows", directFlowBody("etag-flow", "someone", "First"))
	g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
	first := created.header.Get("ETag")
	g.Expect(created.body).To(HaveKeyWithValue("apiVersion", "platform/v1"))
	g.Expect(created.body).To(HaveKeyWithValue("kind", "Direct"))
	g.Expect(created.body).To(HaveKeyWithValue("version", "1.0.0"))
	g.Expect(created.body["definition"]).To(HaveKeyWithValue("target", HaveKeyWithValue("id", "someone")))
	g.Expect(created.body["metadata"]).To(HaveKeyWithValue("uid", Not(BeEmpty())))

	read := call(t, server, http.MethodGet, "/api/flows/etag-flow", "")
	g.Expect(read.status).To(Equal(http.StatusOK))
	g.Expect(read.header.Get("ETag")).To(Equal(first))
	list := call(t, server, http.MethodGet, "/api/flows", "")
	g.Expect(list.body["items"]).To(ContainElement(HaveKeyWithValue("name", "etag-flow")))

	replaced := expectWritesNeedTheCurrentETag(t, server, "/api/flows/etag-flow", first, directFlowBody("etag-flow", "someone", "Second"))
	g.Expect(replaced.body).To(HaveKeyWithValue("description", "Second"))
}

func TestInvalidFlowsAreRefusedWithTheirFieldPaths(t *testing.T) {
	expectFieldErrors(t, devServer(t), "/api/flows", map[string]invalidBody{
		"a Direct flow needs a target": {
			body:     `{"name":"no-target","kind":"Direct","definition":{"flowKind":"Direct"}}`,
			location: "body.definition.target",
		},
		"kind and definition.flowKind agree": {
			body:     `{"name":"two-kinds","kind":"Direct","definition":{"flowKind":"Orchestration"}}`,
			location: "body.definition.flowKind",
		},
		"the version is a strict semantic version": {
			body:     `{"name":"loose","kind":"Direct","version":"v1.0","definition":{"target":{"kind":"Agent","id":"a"}}}`,
			location: "body.version",
		},
		"the system-managed label is reserved": {
			body:     `{"name":"sneaky","kind":"Direct","metadata":{"name":"sneaky","tags":{"platform/system-managed":"true"}},"definition":{"target":{"kind":"Agent","id":"a"}}}`,
			location: "body.metadata.tags[platform/system-managed]",
		},
	})
}

func TestPublishedFlowVersionsAreImmutable(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	created := call(t, server, http.MethodPost, "/api/flows", directFlowBody("publish-flow", "writer", "First"))
	g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)

	stale := `"1"`
	expectProblem(g, call(t, server, http.MethodPost, "/api/flows/publish-flow/versions", `{"version":"1.0.0"}`, "If-Match", stale), http.StatusPreconditionFailed)
	published := call(t, server, http.MethodPost, "/api/flows/publish-flow/versions", `{"version":"1.0.0","activate":true}`, "If-Match", created.header.Get("ETag"))
	g.Expect(published.status).To(Equal(http.StatusCreated), "%v", published.body)
	g.Expect(published.body["metadata"]).To(HaveKeyWithValue("name", "publish-flow-1.0.0"))
	g.Expect(published.body["definition"]).To(And(HaveKeyWithValue("flowName", "publish-flow"), HaveKeyWithValue("version", "1.0.0"),
		HaveKeyWithValue("digest", HavePrefix("sha256:")), HaveKeyWithValue("snapshot", HaveKeyWithValue("description", "First"))))
	g.Expect(published.body["status"]).To(HaveKeyWithValue("active", true))
	flow := call(t, server, http.MethodGet, "/api/flows/publish-flow", "")
	g.Expect(flow.body["status"]).To(And(HaveKeyWithValue("activeVersion", "1.0.0"), HaveKeyWithValue("latestVersion", "1.0.0")))

	again := call(t, server, http.MethodPost, "/api/flows/publish-flow/versions", `{"version":"1.0.0"}`)
	g.Expect(again.status).To(Equal(http.StatusOK), "the same snapshot is idempotent: %v", again.body)
	g.Expect(again.body["metadata"]).To(HaveKeyWithValue("uid", published.body["metadata"].(map[string]any)["uid"]))

	replaced := call(t, server, http.MethodPut, "/api/flows/publish-flow", directFlowBody("publish-flow", "writer", "Second"), "If-Match", flow.header.Get("ETag"))
	g.Expect(replaced.status).To(Equal(http.StatusOK), "%v", replaced.body)
	conflict := call(t, server, http.MethodPost, "/api/flows/publish-flow/versions", `{"version":"1.0.0"}`)
	expectProblem(g, conflict, http.StatusConflict)
	g.Expect(conflict.body["detail"]).To(ContainSubstring("published versions are immutable"))

	second := call(t, server, http.MethodPost, "/api/flows/publish-flow/versions", `{"version":"1.1.0-rc.1+build.7"}`)
	g.Expect(second.status).To(Equal(http.StatusCreated), "%v", second.body)
	g.Expect(second.body["status"]).To(HaveKeyWithValue("active", false), "without activate the active version stays")
	flow = call(t, server, http.MethodGet, "/api/flows/publish-flow", "")
	g.Expect(flow.body["status"]).To(And(HaveKeyWithValue("activeVersion", "1.0.0"), HaveKeyWithValue("latestVersion", "1.1.0-rc.1+build.7")))

	for _, version := range []string{"1.0", "v1.0.0", "01.0.0", "1.0.0-", ""} {
		r := call(t, server, http.MethodPost, "/api/flows/publish-flow/versions", `{"version":"`+version+`"}`)
		expectProblem(g, r, http.StatusUnprocessableEntity)
		g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", "body.version")), "version %q", version)
	}

	versions := call(t, server, http.MethodGet, "/api/flows/publish-flow/versions", "")
	g.Expect(versions.status).To(Equal(http.StatusOK))
	g.Expect(versions.body["items"]).To(HaveExactElements(
		HaveKeyWithValue("definition", HaveKeyWithValue("version", "1.0.0")),
		HaveKeyWithValue("definition", HaveKeyWithValue("version", "1.1.0-rc.1+build.7")),
	))
	one := call(t, server, http.MethodGet, "/api/flows/publish-flow/versions/1.1.0-rc.1+build.7", "")
	g.Expect(one.status).To(Equal(http.StatusOK), "%v", one.body)
	g.Expect(one.body["definition"]).To(HaveKeyWithValue("snapshot", HaveKeyWithValue("description", "Second")))
	expectProblem(g, call(t, server, http.MethodGet, "/api/flows/publish-flow/versions/9.9.9", ""), http.StatusNotFound)
	expectProblem(g, call(t, server, http.MethodPost, "/api/flows/no-such-flow/versions", `{"version":"1.0.0"}`), http.StatusNotFound)

	activated := call(t, server, http.MethodPost, "/api/flows/publish-flow/versions", `{"version":"1.1.0-rc.1+build.7","activate":true}`)
	g.Expect(activated.status).To(Equal(http.StatusOK), "%v", activated.body)
	g.Expect(activated.body["status"]).To(HaveKeyWithValue("active", true))

	flow = call(t, server, http.MethodGet, "/api/flows/publish-flow", "")
	g.Expect(call(t, server, http.MethodDelete, "/api/flows/publish-flow", "", "If-Match", flow.header.Get("ETag")).status).To(Equal(http.StatusNoContent))
	expectProblem(g, call(t, server, http.MethodGet, "/api/flows/publish-flow/versions/1.0.0", ""), http.StatusNotFound)
	versionsLeft := &platformv1.FlowVersionList{}
	g.Expect(kube.List(context.Background(), versionsLeft)).To(Succeed())
	for _, v := range versionsLeft.Items {
		g.Expect(string(v.Definition.FlowName)).NotTo(Equal("publish-flow"), "the versions go with their Flow")
	}
}

func TestFlowsAndAgentsReferencedByAPublishedEntryCannotBeDeleted(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	for _, agent := range []string{"pinned-agent", "step-agent", "earlier-agent"} {
		g.Expect(call(t, server, http.MethodPost, "/api/agents", agentBody(agent, agent)).status).To(Equal(http.StatusCreated))
	}
	g.Expect(call(t, server, http.MethodPost, "/api/flows", directFlowBody("pinned-flow", "pinned-agent", "Direct")).status).To(Equal(http.StatusCreated))
	g.Expect(call(t, server, http.MethodPost, "/api/flows/pinned-flow/versions", `{"version":"1.0.0","activate":true}`).status).To(Equal(http.StatusCreated))
	g.Expect(call(t, server, http.MethodPost, "/api/flows", orchestrationFlowBody("step-flow", "step-agent")).status).To(Equal(http.StatusCreated))
	// Flow version 2.0.0 of step-flow was never published: the Flow's definition decides.
	// moved-flow 1.0.0 invokes earlier-agent; its draft moved on to pinned-agent since.
	moved := call(t, server, http.MethodPost, "/api/flows", directFlowBody("moved-flow", "earlier-agent", "Before"))
	g.Expect(moved.status).To(Equal(http.StatusCreated))
	g.Expect(call(t, server, http.MethodPost, "/api/flows/moved-flow/versions", `{"version":"1.0.0"}`).status).To(Equal(http.StatusCreated))
	// Publication records the latest version on the Flow's status, which changes its ETag.
	moved = call(t, server, http.MethodGet, "/api/flows/moved-flow", "")
	g.Expect(call(t, server, http.MethodPut, "/api/flows/moved-flow", directFlowBody("moved-flow", "pinned-agent", "After"), "If-Match", moved.header.Get("ETag")).status).To(Equal(http.StatusOK))
	publishEntry(t, "pinned-entry", "pinned-flow", "1.0.0")
	publishEntry(t, "step-entry", "step-flow", "2.0.0")
	publishEntry(t, "moved-entry", "moved-flow", "1.0.0")

	cases := map[string]struct {
		path, detail string
	}{
		"a Flow pinned by a published Entry":           {"/api/flows/pinned-flow", `Flow "pinned-flow" is referenced by published entry "pinned-entry"`},
		"the Agent of a pinned Direct Flow":            {"/api/agents/pinned-agent", `Agent "pinned-agent" is referenced by published entry "pinned-entry"`},
		"an Agent step of a pinned Orchestration Flow": {"/api/agents/step-agent", `Agent "step-agent" is referenced by published entry "step-entry"`},
		"the Agent of the pinned version's snapshot":   {"/api/agents/earlier-agent", `Agent "earlier-agent" is referenced by published entry "moved-entry"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			current := call(t, server, http.MethodGet, tc.path, "")
			r := call(t, server, http.MethodDelete, tc.path, "", "If-Match", current.header.Get("ETag"))
			expectProblem(g, r, http.StatusConflict)
			g.Expect(r.body["detail"]).To(Equal(tc.detail))
			g.Expect(call(t, server, http.MethodGet, tc.path, "").status).To(Equal(http.StatusOK), "nothing was deleted")
		})
	}

	g.Expect(platformKube.Delete(context.Background(), &platformv1.PublishedEntry{ObjectMeta: metav1.ObjectMeta{Namespace: httpapi.DevelopmentWorkspace, Name: "pinned-entry"}})).To(Succeed())
	for _, path := range []string{"/api/flows/pinned-flow", "/api/agents/pinned-agent"} {
		current := call(t, server, http.MethodGet, path, "")
		g.Expect(call(t, server, http.MethodDelete, path, "", "If-Match", current.header.Get("ETag")).status).To(Equal(http.StatusNoContent), path)
	}
}

func TestSystemManagedFlowsCannotBeChangedOrDeletedThroughTheAPI(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	enabled := true
	flow := &platformv1.Flow{
		ObjectMeta: metav1.ObjectMeta{Namespace: httpapi.DevelopmentWorkspace, Name: "entry-direct-agent",
			Labels: map[string]string{manifest.SystemManagedLabel: "true"}},
		Definition: platformv1.FlowDefinition{FlowKind: platformv1.DirectFlow, Enabled: &enabled,
			Target: &platformv1.FlowTarget{Kind: platformv1.AgentFlowTarget, ID: "helper"}},
	}
	// Only the platform writes system-managed Flows.
	g.Expect(platformKube.Create(context.Background(), flow)).To(Succeed())
	t.Cleanup(func() { _ = platformKube.Delete(context.Background(), flow) })

	read := call(t, server, http.MethodGet, "/api/flows/entry-direct-agent", "")
	g.Expect(read.body).To(HaveKeyWithValue("systemManaged", true))
	etag := read.header.Get("ETag")
	deleted := call(t, server, http.MethodDelete, "/api/flows/entry-direct-agent", "", "If-Match", etag)
	expectProblem(g, deleted, http.StatusConflict)
	g.Expect(deleted.body["detail"]).To(ContainSubstring("system-managed"))
	expectProblem(g, call(t, server, http.MethodPut, "/api/flows/entry-direct-agent", directFlowBody("entry-direct-agent", "other", "x"), "If-Match", etag), http.StatusConflict)
}
