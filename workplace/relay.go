package workplace

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"

	connlimit "platform.dev/platform/apiserver/listener"
)

// The cookies of the same-session local topology, named as the server names them: the session
// cookie (also when the server splits a large value into chunks named <name>C1, <name>C2, ...)
// and the workspace-selection cookie. No other cookie of the browser ever leaves the host.
const (
	SessionCookie   = "platform-session"
	WorkspaceCookie = "platform-workspace"
)

var relayedCookie = regexp.MustCompile(`^(` + regexp.QuoteMeta(SessionCookie) + `(C[1-9][0-9]{0,2})?|` + regexp.QuoteMeta(WorkspaceCookie) + `)$`)

// RelayedCookie reports whether the cookie name is one the session relay forwards.
func RelayedCookie(name string) bool { return relayedCookie.MatchString(name) }

// Authentication modes of the host.
const (
	// AuthSession is the shipped same-session local topology: the browser signs in on the server,
	// and the relay forwards its session cookie chunks and workspace cookie to the API origin.
	AuthSession = "session"
	// AuthBearer is an independently deployed Workplace: the app sends a bearer token, which the
	// relay forwards; it forwards no cookie at all.
	AuthBearer = "bearer"
)

// forwardedHeaders are the request headers the app's calls need; everything else the browser
// sends (other cookies, Origin, Referer, forwarding headers, ...) stays at the host.
var forwardedHeaders = []string{
	"Accept", "Accept-Language", "Content-Type", "If-Match", "If-None-Match", "Last-Event-ID", "X-Platform-Workspace",
	"X-Requested-With", "Cache-Control",
	// The WebSocket handshake of the hub.
	"Sec-WebSocket-Key", "Sec-WebSocket-Version", "Sec-WebSocket-Protocol", "Sec-WebSocket-Extensions",
}

// relay forwards requests under one path prefix to one target URL.
type relay struct {
	auth   string
	prefix string
	target *url.URL
	proxy  *httputil.ReverseProxy
	log    *log.Logger
}

func newRelay(auth, prefix string, target *url.URL, logger *log.Logger) *relay {
	r := &relay{auth: auth, prefix: prefix, target: target, log: logger}
	r.proxy = &httputil.ReverseProxy{
		Rewrite:        r.rewrite,
		ModifyResponse: r.filterResponse,
		ErrorHandler:   r.unavailable,
		// Streams (run events, the hub's long polling) are flushed as they come.
		FlushInterval: -1,
	}
	return r
}

// rewrite builds the outgoing request from scratch: the target's origin and path, the allowed
// headers, and the credentials of the mode. ReverseProxy itself never follows a redirect.
func (r *relay) rewrite(pr *httputil.ProxyRequest) {
	in, out := pr.In, pr.Out
	rest := strings.TrimPrefix(in.URL.Path, r.prefix)
	query := in.URL.Query()
	out.URL = &url.URL{Scheme: r.target.Scheme, Host: r.target.Host, Path: joinPath(r.target.Path, rest)}
	out.Host = r.target.Host
	header := http.Header{}
	for _, name := range forwardedHeaders {
		if v := in.Header.Values(name); len(v) > 0 {
			header[name] = v
		}
	}
	// ReverseProxy has already reduced Connection and Upgrade to a protocol upgrade's own.
	for _, name := range []string{"Connection", "Upgrade"} {
		if v := out.Header.Values(name); len(v) > 0 {
			header[name] = v
		}
	}
	switch r.auth {
	case AuthSession:
		var kept []string
		for _, c := range in.Cookies() {
			if RelayedCookie(c.Name) {
				kept = append(kept, c.Name+"="+c.Value)
			}
		}
		if len(kept) > 0 {
			header.Set("Cookie", strings.Join(kept, "; "))
		}
	case AuthBearer:
		if v := in.Header.Get("Authorization"); v != "" {
			header.Set("Authorization", v)
		} else if token := query.Get("access_token"); token != "" {
			// Browsers cannot set headers on a WebSocket: the SignalR client sends its token in
			// the query, which the relay moves to the header so it appears in no URL upstream.
			header.Set("Authorization", "Bearer "+token)
		}
	}
	query.Del("access_token")
	out.URL.RawQuery = query.Encode()
	if len(query) == 0 {
		out.URL.RawQuery = ""
	}
	out.Header = header
}

func joinPath(base, rest string) string {
	if rest == "" {
		return base
	}
	return strings.TrimSuffix(base, "/") + "/" + strings.TrimPrefix(rest, "/")
}

// filterResponse passes back only the cookies the relay forwards (so that sign-out and the
// workspace selection work) and never a redirect: the app's calls stay on this host.
func (r *relay) filterResponse(resp *http.Response) error {
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// The hub's WebSocket lives long and is quiet between pings: the host's listener must
		// not close it to make room. The API's hub bounds how many there are.
		connlimit.Keep(resp.Request.Context())
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.StatusCode != http.StatusNotModified {
		return errRedirect
	}
	var kept []string
	for _, line := range resp.Header.Values("Set-Cookie") {
		if c, err := http.ParseSetCookie(line); err == nil && r.auth == AuthSession && RelayedCookie(c.Name) {
			kept = append(kept, line)
		}
	}
	resp.Header.Del("Set-Cookie")
	for _, line := range kept {
		resp.Header.Add("Set-Cookie", line)
	}
	return nil
}

var errRedirect = errors.New("the API answered with a redirect, which the relay does not follow")

// unavailable answers a Problem Details 502 when the API cannot be reached (or redirected): the
// app shows that the API is unavailable. The query is not logged: it may hold a token.
func (r *relay) unavailable(w http.ResponseWriter, req *http.Request, err error) {
	detail := "The platform API at " + r.target.Scheme + "://" + r.target.Host + " does not answer."
	if errors.Is(err, errRedirect) {
		detail = "The platform API answered with a redirect; the Workplace relay does not follow redirects."
	}
	r.log.Printf("relay %s %s: %v", req.Method, req.URL.Path, err)
	writeProblem(w, http.StatusBadGateway, "API unavailable", detail)
}

func (r *relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	// A WebSocket handshake is a GET, which cross-origin protection lets through: its Origin is
	// checked here, since the relay presents the browser's session to the API.
	if origin := req.Header.Get("Origin"); origin != "" && strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
		if u, err := url.Parse(origin); err != nil || u.Host != req.Host {
			writeProblem(w, http.StatusForbidden, "Forbidden", "cross-origin request refused")
			return
		}
	}
	r.proxy.ServeHTTP(w, req)
}

func writeProblem(w http.ResponseWriter, status int, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"title": title, "status": status, "detail": detail})
}

// checkBaseURL accepts an absolute http(s) URL without user information, query or fragment.
func checkBaseURL(name, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s %q: must be an absolute http:// or https:// URL", name, raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, fmt.Errorf("%s %q: must have no user information, query or fragment", name, raw)
	}
	return u, nil
}
