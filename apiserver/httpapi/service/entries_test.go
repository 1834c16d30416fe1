package service_test

import (
	"context"

	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/internal/resourcenamespace"
)

// entryBody is an Entry draft bound to binding (JSON of definition.binding).
func entryBody(name, displayName, binding string) string {
	return `{"apiVersion":"platform/v1","kind":"Entry","metadata":{"name":"` + name + `"},"definition":{"displayName":"` + displayName + `",` +
		`"fields":[{"name":"request","type":"Text","role":"PrimaryInput"}],"binding":` + binding + `}}`
}

// dashboardBody is a Dashboard that is not the default and shows nothing.
func dashboardBody(name string) string {
	return `{"apiVersion":"platform/v1","kind":"Dashboard","metadata":{"name":"` + name + `"},"definition":{"displayName":"Board"}}`
}

// entryWorkspace is a fresh workspace of the development server, and a call scoped to it.
func entryWorkspace(t *testing.T, server *httptest.Server) (string, func(method, path, body string, headers ...string) response) {
	ws := routingWorkspace(t)
	return ws, func(method, path, body string, headers ...string) response {
		return call(t, server, method, path, body, append([]string{httpapi.WorkspaceHeader, ws}, headers...)...)
	}
}

func TestPublishingPinsAnExactFlowVersionAndNeverExposesTheBinding(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	ws, in := entryWorkspace(t, server)
	g.Expect(in(http.MethodPost, "/api/agents", agentBody("helper", "Helper")).status).To(Equal(http.StatusCreated))
	created := in(http.MethodPost, "/api/entries", entryBody("ask", "Ask", `{"agent":{"name":"helper"}}`))
	g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)

	first := in(http.MethodPost, "/api/entries/ask/publish", "")
	g.Expect(first.status).To(Equal(http.StatusOK), "%v", first.body)
	g.Expect(first.body).To(HaveKeyWithValue("changed", true))
	published := first.body["published"].(map[string]any)
	g.Expect(published["resolvedTarget"]).To(Equal(map[string]any{"name": "direct-helper", "version": "1.0.0"}),
		"an Agent binding is published through the agent's Direct Agent Flow, pinned to an exact version")
	g.Expect(published).NotTo(HaveKey("binding"))
	g.Expect(published["presentation"]).NotTo(HaveKey("binding"))
	g.Expect(published).To(HaveKeyWithValue("ownerWorkspaceId", ws))

	again := in(http.MethodPost, "/api/entries/ask/publish", "")
	g.Expect(again.body).To(HaveKeyWithValue("changed", false), "publishing an unchanged draft is idempotent")

	// A draft edit is invisible until the next publication.
	read := in(http.MethodGet, "/api/entries/ask", "")
	edited := in(http.MethodPut, "/api/entries/ask", entryBody("ask", "Ask the helper", `{"agent":{"name":"helper"}}`), "If-Match", read.header.Get("ETag"))
	g.Expect(edited.status).To(Equal(http.StatusOK), "%v", edited.body)
	g.Expect(in(http.MethodGet, "/api/entries/ask/published", "").body["presentation"]).To(HaveKeyWithValue("displayName", "Ask"))
	g.Expect(in(http.MethodPost, "/api/entries/ask/publish", "", "If-Match", read.header.Get("ETag")).status).To(Equal(http.StatusPreconditionFailed),
		"publishing names the draft it read")
	republished := in(http.MethodPost, "/api/entries/ask/publish", "", "If-Match", edited.header.Get("ETag"))
	g.Expect(republished.body).To(HaveKeyWithValue("changed", true))
	g.Expect(in(http.MethodGet, "/api/entries/ask/published", "").body["presentation"]).To(HaveKeyWithValue("displayName", "Ask the helper"))

	status := in(http.MethodGet, "/api/entries/ask", "").body["status"].(map[string]any)
	g.Expect(status["publications"]).To(HaveLen(2), "each publication is recorded")
	g.Expect(status["publications"].([]any)[0]).To(And(HaveKeyWithValue("publishedBy", httpapi.DevelopmentPrincipal), HaveKeyWithValue("generation", 2.0)))

	deps := in(http.MethodGet, "/api/entries/ask/dependencies", "")
	g.Expect(deps.status).To(Equal(http.StatusOK), "%v", deps.body)
	g.Expect(deps.body["binding"]).To(Equal(map[string]any{"agent": map[string]any{"name": "helper"}}), "dependency inspection shows the binding")
	g.Expect(deps.body["resolvedFlow"]).To(And(HaveKeyWithValue("name", "direct-helper"), HaveKeyWithValue("systemManaged", true),
		HaveKeyWithValue("agent", "helper"), HaveKeyWithValue("exists", true)), "and the resolved Flow")
}

func TestAFlowBindingIsPinnedToTheActiveVersionAtPublication(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	_, in := entryWorkspace(t, server)
	g.Expect(in(http.MethodPost, "/api/agents", agentBody("helper", "Helper")).status).To(Equal(http.StatusCreated))
	g.Expect(in(http.MethodPost, "/api/flows", directFlowBody("answer", "helper", "Answers")).status).To(Equal(http.StatusCreated))
	g.Expect(in(http.MethodPost, "/api/flows/answer/versions", `{"version":"1.0.0","activate":true}`).status).To(Equal(http.StatusCreated))
	g.Expect(in(http.MethodPost, "/api/entries", entryBody("answer", "Answer", `{"flow":{"name":"answer"}}`)).status).To(Equal(http.StatusCreated))

	published := in(http.MethodPost, "/api/entries/answer/publish", "")
	g.Expect(published.status).To(Equal(http.StatusOK), "%v", published.body)
	g.Expect(field(published.body, "published", "resolvedTarget")).To(Equal(map[string]any{"name": "answer", "version": "1.0.0"}))

	g.Expect(in(http.MethodPost, "/api/flows/answer/versions", `{"version":"2.0.0","activate":true}`).status).To(Equal(http.StatusCreated))
	g.Expect(field(in(http.MethodGet, "/api/entries/answer/published", "").body, "resolvedTarget", "version")).To(Equal("1.0.0"),
		"a published Entry stays on the exact version it pinned")
}

func TestADraftThatCannotBePublishedIsRefusedWithItsFieldPathsAndNothingIsWritten(t *testing.T) {
	server := devServer(t)
	ws, in := entryWorkspace(t, server)
	NewWithT(t).Expect(in(http.MethodPost, "/api/flows", directFlowBody("unpublished", "nobody", "x")).status).To(Equal(http.StatusCreated))
	cases := map[string]struct {
		binding, location string
	}{
		"a binding to a missing agent":             {`{"agent":{"name":"nobody"}}`, "body.definition.binding.agent.name"},
		"a binding to a missing flow":              {`{"flow":{"name":"nobody"}}`, "body.definition.binding.flow.name"},
		"a version that does not exist":            {`{"flow":{"name":"unpublished","version":"9.9.9"}}`, "body.definition.binding.flow.version"},
		"a flow without an active version":         {`{"flow":{"name":"unpublished"}}`, "body.definition.binding.flow.version"},
		"a resource namespace the workspace lacks": {`{"flow":{"name":"x","namespace":"acme.tools"}}`, "body.definition.binding.flow.namespace"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(in(http.MethodPost, "/api/entries", entryBody("broken", "Broken", tc.binding)).status).To(Equal(http.StatusCreated))
			t.Cleanup(func() {
				read := in(http.MethodGet, "/api/entries/broken", "")
				in(http.MethodDelete, "/api/entries/broken", "", "If-Match", read.header.Get("ETag"))
			})
			r := in(http.MethodPost, "/api/entries/broken/publish", "")
			expectProblem(g, r, http.StatusUnprocessableEntity)
			g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", tc.location)))
			err := kube.Get(context.Background(), client.ObjectKey{Namespace: ws, Name: "broken"}, &platformv1.PublishedEntry{})
			g.Expect(err).To(HaveOccurred(), "nothing is published")
		})
	}
	t.Run("a Prompt Entry without its PrimaryInput field", func(t *testing.T) {
		g := NewWithT(t)
		body := `{"apiVersion":"platform/v1","kind":"Entry","metadata":{"name":"noinput"},"definition":{"binding":{"agent":{"name":"x"}}}}`
		g.Expect(in(http.MethodPost, "/api/entries", body).status).To(Equal(http.StatusCreated))
		r := in(http.MethodPost, "/api/entries/noinput/publish", "")
		expectProblem(g, r, http.StatusUnprocessableEntity)
		g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", "body.definition.fields")))
	})
}

func TestDeletingAnEntryShownOnADashboardNeedsTheCallersExplicitOptIn(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	ws, in := entryWorkspace(t, server)
	g.Expect(in(http.MethodPost, "/api/agents", agentBody("helper", "Helper")).status).To(Equal(http.StatusCreated))
	if r := in(http.MethodPost, "/api/entries", entryBody("ask", "Ask", `{"agent":{"name":"helper"}}`)); r.status != http.StatusCreated {
		t.Fatalf("%v", r.body)
	}
	g.Expect(in(http.MethodPost, "/api/entries/ask/publish", "").status).To(Equal(http.StatusOK))
	board := in(http.MethodPost, "/api/dashboards", `{"apiVersion":"platform/v1","kind":"Dashboard","metadata":{"name":"team"},`+
		`"definition":{"entries":[{"name":"ask","role":"Featured"}]}}`)
	g.Expect(board.status).To(Equal(http.StatusCreated), "%v", board.body)

	etag := in(http.MethodGet, "/api/entries/ask", "").header.Get("ETag")
	expectProblem(g, in(http.MethodDelete, "/api/entries/ask", ""), http.StatusPreconditionRequired)
	refused := in(http.MethodDelete, "/api/entries/ask", "", "If-Match", etag)
	expectProblem(g, refused, http.StatusConflict)
	g.Expect(refused.body["detail"]).To(ContainSubstring(`Dashboard "team"`))
	g.Expect(in(http.MethodGet, "/api/entries/ask/published", "").status).To(Equal(http.StatusOK), "nothing was deleted")

	g.Expect(in(http.MethodDelete, "/api/entries/ask?removeDashboardReferences=true", "", "If-Match", etag).status).To(Equal(http.StatusNoContent))
	expectProblem(g, in(http.MethodGet, "/api/entries/ask", ""), http.StatusNotFound)
	g.Expect(kube.Get(context.Background(), client.ObjectKey{Namespace: ws, Name: "ask"}, &platformv1.PublishedEntry{})).NotTo(Succeed())
	g.Expect(field(in(http.MethodGet, "/api/dashboards/team", "").body, "definition", "entries")).To(BeNil(), "the reference is removed")
}

func TestADashboardViewOrdersItsEntriesByRoleAndMarksWhatItCannotShow(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	_, in := entryWorkspace(t, server)
	g.Expect(in(http.MethodPost, "/api/agents", agentBody("helper", "Helper")).status).To(Equal(http.StatusCreated))
	for _, name := range []string{"first", "second", "draft"} {
		g.Expect(in(http.MethodPost, "/api/entries", entryBody(name, name, `{"agent":{"name":"helper"}}`)).status).To(Equal(http.StatusCreated))
	}
	g.Expect(in(http.MethodPost, "/api/entries/first/publish", "").status).To(Equal(http.StatusOK))
	g.Expect(in(http.MethodPost, "/api/entries/second/publish", "").status).To(Equal(http.StatusOK))
	created := in(http.MethodPost, "/api/dashboards", `{"apiVersion":"platform/v1","kind":"Dashboard","metadata":{"name":"board"},"definition":{"entries":[`+
		`{"name":"second","role":"Standard"},{"name":"gone","role":"Featured"},{"name":"draft","role":"Standard","order":5},{"name":"first","role":"Primary"},`+
		`{"name":"x","namespace":"acme.tools","role":"Standard","order":9}]}}`)
	g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)

	view := in(http.MethodGet, "/api/dashboards/board/view", "")
	g.Expect(view.status).To(Equal(http.StatusOK), "%v", view.body)
	var order, states []string
	for _, e := range view.body["entries"].([]any) {
		order = append(order, e.(map[string]any)["name"].(string))
		states = append(states, e.(map[string]any)["state"].(string))
	}
	g.Expect(order).To(Equal([]string{"first", "gone", "second", "draft", "x"}), "Primary, then Featured, then Standard by order")
	g.Expect(states).To(Equal([]string{"available", "missing", "available", "unpublished", "missing"}))
	g.Expect(view.body["entries"].([]any)[0]).To(HaveKeyWithValue("entry", HaveKeyWithValue("presentation", HaveKeyWithValue("displayName", "first"))))
}

func TestAWorkspaceHasAtMostOneDefaultDashboardAndOnePrimaryEntryPerDashboard(t *testing.T) {
	server := devServer(t)
	_, in := entryWorkspace(t, server)
	g := NewWithT(t)
	g.Expect(in(http.MethodPost, "/api/dashboards", `{"apiVersion":"platform/v1","kind":"Dashboard","metadata":{"name":"main"},"definition":{"isDefault":true}}`).status).
		To(Equal(http.StatusCreated))
	second := in(http.MethodPost, "/api/dashboards", `{"apiVersion":"platform/v1","kind":"Dashboard","metadata":{"name":"other"},"definition":{"isDefault":true}}`)
	expectProblem(g, second, http.StatusUnprocessableEntity)
	g.Expect(second.body["errors"]).To(ContainElement(HaveKeyWithValue("location", "body.definition.isDefault")))
	twoPrimary := in(http.MethodPost, "/api/dashboards", `{"apiVersion":"platform/v1","kind":"Dashboard","metadata":{"name":"two"},`+
		`"definition":{"entries":[{"name":"a","role":"Primary"},{"name":"b","role":"Primary"}]}}`)
	expectProblem(g, twoPrimary, http.StatusUnprocessableEntity)
	g.Expect(twoPrimary.body["errors"]).To(ContainElement(HaveKeyWithValue("location", "body.definition.entries")))
}

func TestDiscoveryAnswersPublishedEntriesOfTheCallersWorkspacesWithTheirOwnerAndState(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	ws, in := entryWorkspace(t, server)
	g.Expect(in(http.MethodPost, "/api/agents", agentBody("helper", "Helper")).status).To(Equal(http.StatusCreated))
	console := `{"apiVersion":"platform/v1","kind":"Entry","metadata":{"name":"fallback"},"definition":{"displayName":"Anything else",` +
		`"fields":[{"name":"q","role":"PrimaryInput"}],"binding":{"agent":{"name":"helper"}},"exposure":{"surfaces":["Console"]},"consoleRoles":["Fallback"]}}`
	for _, body := range []string{entryBody("report", "Sales report", `{"agent":{"name":"helper"}}`), console, entryBody("draft-only", "Draft", `{"agent":{"name":"helper"}}`)} {
		g.Expect(in(http.MethodPost, "/api/entries", body).status).To(Equal(http.StatusCreated))
	}
	g.Expect(in(http.MethodPost, "/api/entries/report/publish", "").status).To(Equal(http.StatusOK))
	g.Expect(in(http.MethodPost, "/api/entries/fallback/publish", "").status).To(Equal(http.StatusOK))
	// No controller runs here: the target state is what the PublishedEntry reconciler would
	// report, written with the platform's identity as the reconciler does.
	for _, name := range []string{"report", "fallback"} {
		published := &platformv1.PublishedEntry{}
		g.Expect(platformKube.Get(context.Background(), client.ObjectKey{Namespace: ws, Name: name}, published)).To(Succeed())
		published.Status.TargetState = platformv1.TargetExecutable
		g.Expect(platformKube.Status().Update(context.Background(), published)).To(Succeed())
	}

	workplace := call(t, server, http.MethodGet, "/api/entries?surface=Workplace&workspace="+ws, "")
	g.Expect(workplace.status).To(Equal(http.StatusOK), "%v", workplace.body)
	g.Expect(workplace.body["items"]).To(ConsistOf(And(HaveKeyWithValue("name", "report"), HaveKeyWithValue("ownerWorkspaceId", ws),
		HaveKeyWithValue("targetState", "Executable"))), "a draft that was never published is not discovered; a Console Entry is not on the Workplace")

	found := call(t, server, http.MethodGet, "/api/entries?surface=Console&workspace="+ws+"&search=anything", "")
	g.Expect(found.body["items"]).To(ConsistOf(HaveKeyWithValue("name", "fallback")))
	g.Expect(found.body["fallbacks"]).To(BeEmpty())

	none := call(t, server, http.MethodGet, "/api/entries?workspace="+ws+"&search=weather", "")
	g.Expect(none.body["items"]).To(BeEmpty())
	g.Expect(none.body["fallbacks"]).To(ConsistOf(And(HaveKeyWithValue("ownerWorkspaceId", ws), HaveKeyWithValue("query", "weather"),
		HaveKeyWithValue("entry", HaveKeyWithValue("name", "fallback")))), "with no match every executable Fallback Entry is offered as a choice")
}

func TestEntriesAndDashboardsOfAnotherWorkspaceAreNotFoundAndNotDiscovered(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) { entriesOfAnotherWorkspace(t, newIdentityEnv(t, s)) })
}

func entriesOfAnotherWorkspace(t *testing.T, e *identityEnv) {
	g := NewWithT(t)
	other := e.workspace("other")
	e.account("member-a", e.ws, identity.RoleOwner)
	cookie := e.signIn("member-a", adminPassword)
	as := func(ws identity.Workspace, method, path, body string, headers ...string) response {
		return e.do(cookie, method, path, body, append([]string{httpapi.WorkspaceHeader, ws.RouteName}, headers...)...)
	}
	g.Expect(as(e.ws, http.MethodPost, "/api/agents", agentBody("helper", "Helper")).status).To(Equal(http.StatusCreated))
	g.Expect(as(e.ws, http.MethodPost, "/api/entries", entryBody("ask", "Ask", `{"agent":{"name":"helper"}}`)).status).To(Equal(http.StatusCreated))
	g.Expect(as(e.ws, http.MethodPost, "/api/entries/ask/publish", "").status).To(Equal(http.StatusOK))
	published := as(e.ws, http.MethodGet, "/api/entries/ask/published", "")
	g.Expect(published.body).To(HaveKeyWithValue("ownerWorkspaceId", e.ws.ID), "the owner is the workspace's id")

	// The administrator's own entry in the other workspace is invisible to the member.
	admin := func(method, path, body string) response {
		return e.do(e.adminCookie, method, path, body, httpapi.WorkspaceHeader, other.RouteName)
	}
	g.Expect(admin(http.MethodPost, "/api/agents", agentBody("secret", "Secret")).status).To(Equal(http.StatusCreated))
	g.Expect(admin(http.MethodPost, "/api/entries", entryBody("theirs", "Theirs", `{"agent":{"name":"secret"}}`)).status).To(Equal(http.StatusCreated))
	g.Expect(admin(http.MethodPost, "/api/entries/theirs/publish", "").status).To(Equal(http.StatusOK))

	for _, path := range []string{"/api/entries/theirs", "/api/entries/theirs/published", "/api/entries/theirs/dependencies", "/api/dashboards/home"} {
		expectProblem(g, as(other, http.MethodGet, path, ""), http.StatusNotFound)
	}
	expectProblem(g, as(other, http.MethodPost, "/api/entries/theirs/publish", ""), http.StatusNotFound)
	discovered := e.do(cookie, http.MethodGet, "/api/entries", "")
	g.Expect(discovered.status).To(Equal(http.StatusOK), "%v", discovered.body)
	g.Expect(discovered.body["items"]).To(ContainElement(HaveKeyWithValue("name", "ask")))
	g.Expect(discovered.body["items"]).NotTo(ContainElement(HaveKeyWithValue("name", "theirs")), "discovery never shows another workspace's Entries")
}

func TestAPackNamespaceOfTheWorkspaceIsReachedThroughTheNamespacedRoutes(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	ws, in := entryWorkspace(t, server)
	ns, err := resourcenamespace.Ensure(context.Background(), kube, ws, "acme.tools")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		_ = kube.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	agent := &platformv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tool-helper"}}
	g.Expect(kube.Create(context.Background(), agent)).To(Succeed())
	entry := &platformv1.Entry{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tooling"}, Definition: platformv1.EntryDefinition{
		Binding: platformv1.EntryBinding{Agent: &platformv1.LocalObjectReference{Name: "tool-helper"}},
		EntryPresentation: platformv1.EntryPresentation{Fields: []platformv1.EntryField{
			{Name: "q", Type: platformv1.TextField, Role: platformv1.PrimaryInputRole}}}}}
	g.Expect(kube.Create(context.Background(), entry)).To(Succeed())

	published := in(http.MethodPost, "/api/namespaces/acme.tools/entries/tooling/publish", "")
	g.Expect(published.status).To(Equal(http.StatusOK), "%v", published.body)
	g.Expect(field(published.body, "published", "namespace")).To(Equal("acme.tools"))
	g.Expect(in(http.MethodGet, "/api/namespaces/acme.tools/entry-drafts", "").body["items"]).To(HaveLen(1))
	expectProblem(g, in(http.MethodGet, "/api/namespaces/other.pack/entries/tooling", ""), http.StatusNotFound)
	g.Expect(in(http.MethodGet, "/api/entries/tooling", "").status).To(Equal(http.StatusNotFound), "the default namespace does not hold it")
}

// Rules 20 and 21: the normal Flow delete refuses a system-managed Direct Agent Flow; the
// cleanup's system-Flow option removes it, with its versions, once no published Entry uses it.
func TestCleanupRemovesASystemManagedFlowOnlyAfterItsLastPublishedEntryIsGone(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	ws, in := entryWorkspace(t, server)
	g.Expect(in(http.MethodPost, "/api/agents", agentBody("helper", "Helper")).status).To(Equal(http.StatusCreated))
	g.Expect(in(http.MethodPost, "/api/entries", entryBody("ask", "Ask", `{"agent":{"name":"helper"}}`)).status).To(Equal(http.StatusCreated))
	g.Expect(in(http.MethodPost, "/api/entries/ask/publish", "").status).To(Equal(http.StatusOK))
	g.Expect(in(http.MethodPost, "/api/flows", directFlowBody("answer", "helper", "Answers")).status).To(Equal(http.StatusCreated))

	flowETag := func(name string) string { return in(http.MethodGet, "/api/flows/"+name, "").header.Get("ETag") }
	expectProblem(g, in(http.MethodDelete, "/api/flows/direct-helper", "", "If-Match", flowETag("direct-helper")), http.StatusConflict)
	used := in(http.MethodDelete, "/api/system-flows/direct-helper", "", "If-Match", flowETag("direct-helper"))
	expectProblem(g, used, http.StatusConflict)
	g.Expect(used.body["detail"]).To(ContainSubstring(`"ask"`), "the refusal names the published Entry that still uses it")
	expectProblem(g, in(http.MethodDelete, "/api/system-flows/answer", "", "If-Match", flowETag("answer")), http.StatusConflict)
	g.Expect(in(http.MethodDelete, "/api/system-flows/direct-helper", "").status).To(Equal(http.StatusPreconditionRequired))

	entry := in(http.MethodGet, "/api/entries/ask", "")
	g.Expect(in(http.MethodDelete, "/api/entries/ask", "", "If-Match", entry.header.Get("ETag")).status).To(Equal(http.StatusNoContent))
	g.Eventually(func() int {
		return in(http.MethodDelete, "/api/system-flows/direct-helper", "", "If-Match", flowETag("direct-helper")).status
	}).Should(Equal(http.StatusNoContent), "with its last published Entry gone, the cleanup removes it")
	g.Expect(in(http.MethodGet, "/api/flows/direct-helper", "").status).To(Equal(http.StatusNotFound))
	versions := &platformv1.FlowVersionList{}
	g.Expect(kube.List(context.Background(), versions, client.InNamespace(ws))).To(Succeed())
	for _, v := range versions.Items {
		g.Expect(string(v.Definition.FlowName)).NotTo(Equal("direct-helper"), "its published versions go with it")
	}
	g.Expect(in(http.MethodGet, "/api/flows/answer", "").status).To(Equal(http.StatusOK), "a user Flow is not the cleanup's to remove this way")
}
