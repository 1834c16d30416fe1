package service_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/workplace"
)

// recordedRequest is what reached the API origin through the relay.
type recordedRequest struct {
	method, path, rawQuery, host string
	header                       http.Header
}

// relayPeers is the real service API behind a recorder, another origin that must never be
// reached, and the Workplace host relaying to the API.
type relayPeers struct {
	api, elsewhere *httptest.Server
	mu             sync.Mutex
	seen           []recordedRequest
	elsewhereHits  int
}

func newRelayPeers(t *testing.T) *relayPeers {
	t.Helper()
	handler, _, _ := localHandler(t, nil)
	p := &relayPeers{}
	p.elsewhere = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		p.mu.Lock()
		p.elsewhereHits++
		p.mu.Unlock()
	}))
	t.Cleanup(p.elsewhere.Close)
	p.api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, recordedRequest{method: r.Method, path: r.URL.Path, rawQuery: r.URL.RawQuery, host: r.Host, header: r.Header.Clone()})
		p.mu.Unlock()
		// Two answers the real API never gives, to check what the relay does with them.
		switch r.URL.Path {
		case "/api/test/redirect-elsewhere":
			http.Redirect(w, r, p.elsewhere.URL+"/collect", http.StatusFound)
			return
		case "/api/test/cookies":
			http.SetCookie(w, &http.Cookie{Name: "tracker", Value: "1", Path: "/"})
			http.SetCookie(w, &http.Cookie{Name: httpapi.WorkspaceCookie, Value: "ws", Path: "/"})
			return
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(p.api.Close)
	return p
}

func (p *relayPeers) last() recordedRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[len(p.seen)-1]
}

func (p *relayPeers) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen)
}

func workplaceHost(t *testing.T, opts workplace.Options) *httptest.Server {
	t.Helper()
	host, err := workplace.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(host.Handler())
	t.Cleanup(front.Close)
	return front
}

func send(t *testing.T, method, url, body string, header map[string]string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return resp, out
}

// The relay is named after the server's cookies without importing the server: the names must match.
func TestTheWorkplaceRelayNamesTheServersCookies(t *testing.T) {
	g := NewWithT(t)
	g.Expect(workplace.SessionCookie).To(Equal(httpapi.SessionCookie))
	g.Expect(workplace.WorkspaceCookie).To(Equal(httpapi.WorkspaceCookie))
	for name, relayed := range map[string]bool{
		"platform-session": true, "platform-sessionC1": true, "platform-sessionC12": true, "platform-workspace": true,
		"platform-sessionX": false, "platform-antiforgery": false, "other": false, "platform-sessionC0": false,
	} {
		g.Expect(workplace.RelayedCookie(name)).To(Equal(relayed), name)
	}
}

func TestTheWorkplaceRelayForwardsOnlyTheSessionChunksAndTheWorkspaceCookieToTheExactAPIOrigin(t *testing.T) {
	g := NewWithT(t)
	p := newRelayPeers(t)
	front := workplaceHost(t, workplace.Options{APIBaseURL: p.api.URL})
	ws := uniqueWorkspace("relay")

	// Bootstrap through the relay: the session cookie comes back to the browser.
	resp, _ := send(t, http.MethodPost, front.URL+"/api/auth/bootstrap", bootstrapBody(ws, "Correct-horse-battery-1"), nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusCreated))
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == httpapi.SessionCookie {
			session = c
		}
	}
	g.Expect(session).NotTo(BeNil(), "the session cookie the API set reaches the browser")

	// A browser sends every cookie of the host (cookies ignore ports) and its own headers.
	cookies := "platform-session=" + session.Value + "; platform-sessionC1=chunk; platform-workspace=" + ws +
		"; platform-antiforgery=af; other=secret; platform-sessionX=no"
	resp, body := send(t, http.MethodGet, front.URL+"/api/identity/context", "", map[string]string{
		"Cookie": cookies, "Referer": front.URL + "/w/" + ws, "X-Forwarded-For": "203.0.113.9", "Sec-Fetch-Site": "same-origin",
	})
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "the API authenticates the relayed session cookie")
	g.Expect(body).To(HaveKeyWithValue("workspace", HaveKeyWithValue("name", ws)))
	seen := p.last()
	g.Expect(seen.header.Values("Cookie")).To(Equal([]string{"platform-session=" + session.Value + "; platform-sessionC1=chunk; platform-workspace=" + ws}),
		"only the session cookie chunks and the workspace cookie reach the API")
	g.Expect(seen.host).To(Equal(strings.TrimPrefix(p.api.URL, "http://")))
	for _, h := range []string{"Referer", "X-Forwarded-For", "Sec-Fetch-Site", "Origin", "Authorization"} {
		g.Expect(seen.header.Get(h)).To(BeEmpty(), h)
	}

	// Whatever Host the request names, it goes to the configured API origin.
	resp, _ = send(t, http.MethodGet, front.URL+"/api/identity/context", "", map[string]string{"Cookie": cookies, "Host": "evil.example"})
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(p.last().host).To(Equal(strings.TrimPrefix(p.api.URL, "http://")))

	// Only the two cookies come back from the API.
	resp, _ = send(t, http.MethodGet, front.URL+"/api/test/cookies", "", nil)
	names := []string{}
	for _, c := range resp.Cookies() {
		names = append(names, c.Name)
	}
	g.Expect(names).To(Equal([]string{httpapi.WorkspaceCookie}))
}

func TestTheWorkplaceRelayNeverFollowsARedirectNorReachesAnotherOrigin(t *testing.T) {
	g := NewWithT(t)
	p := newRelayPeers(t)
	front := workplaceHost(t, workplace.Options{APIBaseURL: p.api.URL})

	resp, body := send(t, http.MethodGet, front.URL+"/api/test/redirect-elsewhere", "", map[string]string{"Cookie": "platform-session=s"})
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadGateway))
	g.Expect(resp.Header.Get("Location")).To(BeEmpty(), "the browser is not sent elsewhere either")
	g.Expect(body["detail"]).To(ContainSubstring("redirect"))
	g.Expect(p.elsewhereHits).To(BeZero())

	// A state-changing request of another site's page never reaches the API.
	before := p.count()
	resp, _ = send(t, http.MethodPost, front.URL+"/api/auth/logout", "", map[string]string{"Cookie": "platform-session=s", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
	g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
	resp, _ = send(t, http.MethodGet, front.URL+"/hubs/workplace", "", map[string]string{"Origin": "https://evil.example", "Upgrade": "websocket", "Connection": "Upgrade"})
	g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden), "a WebSocket handshake from another site is refused")
	g.Expect(p.count()).To(Equal(before))

	// With session cookies, the hub must be on the API origin: the cookies go nowhere else.
	_, err := workplace.New(workplace.Options{APIBaseURL: p.api.URL, HubURL: p.elsewhere.URL + "/hubs/workplace"})
	g.Expect(err).To(MatchError(ContainSubstring("the hub must be on the API origin")))
}

func TestAnIndependentlyDeployedWorkplaceRelaysABearerTokenAndNoCookie(t *testing.T) {
	g := NewWithT(t)
	p := newRelayPeers(t)
	ws := uniqueWorkspace("bearer")
	resp, _ := send(t, http.MethodPost, p.api.URL+"/api/auth/bootstrap", bootstrapBody(ws, "Correct-horse-battery-1"), nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusCreated))
	cookie := resp.Cookies()[0]
	resp, pat := send(t, http.MethodPost, p.api.URL+"/api/identity/pat", patRequest(ws, []string{"workspaces/read", "runs/read"}, nil),
		map[string]string{"Cookie": cookie.Name + "=" + cookie.Value})
	g.Expect(resp.StatusCode).To(Equal(http.StatusCreated))
	token := pat["token"].(string)

	front := workplaceHost(t, workplace.Options{APIBaseURL: p.api.URL, Authentication: workplace.AuthBearer})
	resp, _ = send(t, http.MethodGet, front.URL+"/api/identity/context", "", map[string]string{"Cookie": cookie.Name + "=" + cookie.Value})
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), "no cookie is relayed by a bearer Workplace")
	g.Expect(p.last().header.Get("Cookie")).To(BeEmpty())

	resp, _ = send(t, http.MethodGet, front.URL+"/api/identity/context", "", map[string]string{"Authorization": "Bearer " + token, "Cookie": cookie.Name + "=" + cookie.Value})
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(p.last().header.Get("Cookie")).To(BeEmpty())

	// The SignalR client sends its token in the query of a WebSocket: it moves to the header.
	send(t, http.MethodGet, front.URL+"/hubs/workplace?id=abc&access_token="+token, "", nil)
	seen := p.last()
	g.Expect(seen.path).To(Equal("/hubs/workplace"))
	g.Expect(seen.rawQuery).To(Equal("id=abc"))
	g.Expect(seen.header.Get("Authorization")).To(Equal("Bearer " + token))
}
