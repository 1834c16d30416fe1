package service_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apiserver/ratelimit"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// limitsClock is the clock of the rate limits of localHandlerOn's servers: the tests of limits
// stop it inside one window, so that a window never ends between two requests.
var limitsClock = time.Now

// stopLimitsClock stops the limits' clock a quarter into a second until the test ends.
func stopLimitsClock(t *testing.T) time.Time {
	now := time.Now().Truncate(time.Minute).Add(250 * time.Millisecond)
	limitsClock = func() time.Time { return now }
	t.Cleanup(func() { limitsClock = time.Now })
	return now
}

// annotateWorkspace sets the annotations of a workspace's namespace, as kubectl annotate does.
func annotateWorkspace(t testing.TB, ws string, annotations map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: ws}, ns); err != nil {
		t.Fatal(err)
	}
	if ns.Annotations == nil {
		ns.Annotations = map[string]string{}
	}
	for k, v := range annotations {
		ns.Annotations[k] = v
	}
	if err := kube.Update(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
}

func TestARateLimitAnswers429WithRetryAfterAndLeavesOtherWorkspacesAndTokensAlone(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		w := newPATWorld(t, opts)
		stopLimitsClock(t)
		_, hot := w.createPAT(t, w.member, w.ws, "resources/read", "runs/read", "runs/execute")
		_, calm := w.createPAT(t, w.member, w.ws, "resources/read")
		_, elsewhere := w.createPAT(t, w.member, w.other, "resources/read")
		annotateWorkspace(t, w.ws, map[string]string{ratelimit.RequestsPerSecondAnnotation: "5", ratelimit.TokenRequestsPerSecondAnnotation: "3",
			ratelimit.RunsPerMinuteAnnotation: "2"})
		annotateWorkspace(t, w.other, map[string]string{ratelimit.RequestsPerSecondAnnotation: "5"})
		read := func(token string) response { return w.call(t, http.MethodGet, "/api/agents", "", bearer(token)...) }
		expectLimited := func(r response, limit string) {
			expectProblem(g, r, http.StatusTooManyRequests)
			g.Expect(r.header.Get("Retry-After")).To(Equal("1"), "the window of a second ends in 750 ms: retry after 1 s")
			g.Expect(r.body).To(And(HaveKeyWithValue("code", "RateLimited"), HaveKeyWithValue("limit", limit)))
			g.Expect(r.body["detail"]).To(ContainSubstring("retry after 1 s"))
		}

		for i := range 3 {
			g.Expect(read(hot).status).To(Equal(http.StatusOK), "request %d of the token's 3 per second", i+1)
		}
		expectLimited(read(hot), ratelimit.TokenRequests)
		g.Expect(read(calm).status).To(Equal(http.StatusOK), "another token of the workspace has its own count")
		expectLimited(read(calm), ratelimit.WorkspaceRequests)
		for i := range 5 {
			g.Expect(read(elsewhere).status).To(Equal(http.StatusOK), "another workspace counts apart: request %d", i+1)
		}
		expectLimited(read(elsewhere), ratelimit.WorkspaceRequests)

		// Runs started per minute: the requests that start runs are counted before they do any work.
		limitsClock = func() time.Time { return time.Now().Truncate(time.Minute).Add(90 * time.Second) }
		for i := range 2 {
			r := w.call(t, http.MethodPost, "/api/workspaces/"+w.ws+"/interactions/00000000-0000-0000-0000-000000000000/messages", `{"text":"hi"}`, bearer(hot)...)
			g.Expect(r.status).NotTo(Equal(http.StatusTooManyRequests), "request %d of 2 a minute reaches the handler", i+1)
		}
		r := w.call(t, http.MethodPost, "/api/workspaces/"+w.ws+"/interactions/00000000-0000-0000-0000-000000000000/messages", `{"text":"hi"}`, bearer(hot)...)
		expectProblem(g, r, http.StatusTooManyRequests)
		g.Expect(r.body).To(HaveKeyWithValue("limit", ratelimit.WorkspaceRuns))
		g.Expect(r.header.Get("Retry-After")).To(Equal("30"), "the minute's window ends in 30 s")
		g.Expect(read(calm).status).To(Equal(http.StatusOK), "reads go on while runs are limited")

		// The Console's count of refusals: 4 of the workspace, 1 of the other.
		limits := w.call(t, http.MethodGet, "/api/workspaces/"+w.ws+"/limits", "", withCookie(w.member)...)
		g.Expect(limits.status).To(Equal(http.StatusOK), "%v", limits.body)
		g.Expect(limits.body).To(And(HaveKeyWithValue("requestsPerSecond", BeNumerically("==", 5)), HaveKeyWithValue("tokenRequestsPerSecond", BeNumerically("==", 3)),
			HaveKeyWithValue("runsPerMinute", BeNumerically("==", 2)), HaveKeyWithValue("tokenRunsPerMinute", BeNumerically("==", 0))))
		g.Expect(field(limits.body, "recent", "refused")).To(BeNumerically("==", 3))
	})
}

// /mcp is held to the same limits as the rest of the service API: an access token's MCP
// requests past its requests per second are answered 429 Problem Details with Retry-After.
func TestMCPRequestsCountAgainstTheTokensLimit(t *testing.T) {
	g := NewWithT(t)
	w := newPATWorld(t, store.Options{DataDir: t.TempDir()})
	stopLimitsClock(t)
	_, token := w.createPAT(t, w.member, w.ws, "resources/read")
	annotateWorkspace(t, w.ws, map[string]string{ratelimit.TokenRequestsPerSecondAnnotation: "2"})
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`
	mcp := func() response {
		return w.call(t, http.MethodPost, "/mcp", initialize, append(bearer(token), "Accept", "application/json, text/event-stream")...)
	}
	for i := range 2 {
		g.Expect(mcp().status).To(Equal(http.StatusOK), "MCP request %d of 2 a second", i+1)
	}
	r := mcp()
	expectProblem(g, r, http.StatusTooManyRequests)
	g.Expect(r.header.Get("Retry-After")).To(Equal("1"))
	g.Expect(r.body).To(HaveKeyWithValue("limit", ratelimit.TokenRequests))
}

// A flooding access token must cost the replica almost nothing: once a token was refused and its
// window is full, its next requests are answered 429 before anything else (authentication,
// routing, the store), from memory, with a body written before.
func TestARefusedTokensRequestNeitherTouchesTheStoreNorAllocatesMuch(t *testing.T) {
	g := NewWithT(t)
	w := newPATWorld(t, store.Options{DataDir: t.TempDir()})
	stopLimitsClock(t)
	_, token := w.createPAT(t, w.member, w.ws, "resources/read")
	annotateWorkspace(t, w.ws, map[string]string{ratelimit.TokenRequestsPerSecondAnnotation: "2"})
	for i := range 2 {
		g.Expect(w.call(t, http.MethodGet, "/api/agents", "", bearer(token)...).status).To(Equal(http.StatusOK), "request %d of 2 a second", i+1)
	}
	g.Expect(w.call(t, http.MethodGet, "/api/agents", "", bearer(token)...).status).To(Equal(http.StatusTooManyRequests), "the third is refused")

	handler := w.server.Config.Handler
	req := httptest.NewRequest(http.MethodGet, "/api/agents", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	out := &discardingWriter{header: http.Header{}}
	refused := func() {
		clear(out.header)
		out.status = 0
		handler.ServeHTTP(out, req)
	}
	refused()
	g.Expect(out.status).To(Equal(http.StatusTooManyRequests))
	g.Expect(out.header.Get("Retry-After")).To(Equal("1"))
	g.Expect(out.header.Get("Content-Type")).To(Equal("application/problem+json"))

	before := w.db.Counts()
	allocs := testing.AllocsPerRun(1000, refused)
	ran := w.db.Counts().Sub(before)
	g.Expect(out.status).To(Equal(http.StatusTooManyRequests))
	// The refusals are added to the store's count once a second, not per request: at most that
	// one upsert lands meanwhile.
	g.Expect(ran.Statements).To(BeNumerically("<=", 1), "1,000 refusals ran %d statements", ran.Statements)
	g.Expect(allocs).To(BeNumerically("<=", 1), "a refusal allocates %.1f times", allocs)
}

// discardingWriter is a ResponseWriter that keeps the status and headers and drops the body.
type discardingWriter struct {
	header http.Header
	status int
}

func (d *discardingWriter) Header() http.Header { return d.header }

func (d *discardingWriter) Write(p []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	return len(p), nil
}

func (d *discardingWriter) WriteHeader(status int) { d.status = status }
