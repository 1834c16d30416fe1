package workplace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"log"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"platform.dev/platform/workplace/web"
)

// Defaults of the host.
const (
	DefaultAddr       = "127.0.0.1:5180"
	DefaultAPIBaseURL = "http://127.0.0.1:5100/"
	// HubPath is where the hub is, under the API base URL, unless the hub URL says otherwise; the
	// app reaches it on this host under the same path.
	HubPath = "hubs/workplace"
)

// Options configure the host: the server is known only by its API base URL and hub URL.
type Options struct {
	// APIBaseURL is the server's API base URL (default DefaultAPIBaseURL).
	APIBaseURL string
	// HubURL is the real-time hub; derived as HubPath under APIBaseURL when empty.
	HubURL string
	// Authentication is AuthSession (default) or AuthBearer.
	Authentication string
	// Log receives the host's own messages (never a query string, a cookie or a token).
	Log *log.Logger
	// Diagnostics is true for the Development host: the app shows automatic Results in a
	// collapsed diagnostic control of the conversation (Workplace rule 14), and no other host does.
	Diagnostics bool
}

// Host serves the Workplace app and its relay.
type Host struct {
	api, hub *url.URL
	auth     string
	handler  http.Handler
	// diagnostics: see Options.Diagnostics.
	diagnostics bool
}

// New checks opts and builds the host.
func New(opts Options) (*Host, error) {
	if opts.APIBaseURL == "" {
		opts.APIBaseURL = DefaultAPIBaseURL
	}
	if opts.Authentication == "" {
		opts.Authentication = AuthSession
	}
	if opts.Log == nil {
		opts.Log = log.New(log.Writer(), "workplace: ", log.LstdFlags)
	}
	auth := strings.ToLower(opts.Authentication)
	if auth != AuthSession && auth != AuthBearer {
		return nil, fmt.Errorf("authentication %q: must be %s or %s", opts.Authentication, AuthSession, AuthBearer)
	}
	api, err := checkBaseURL("API base URL", opts.APIBaseURL)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(api.Path, "/") {
		api.Path += "/"
	}
	hubRaw := opts.HubURL
	if hubRaw == "" {
		hubRaw = api.JoinPath(HubPath).String()
	}
	hub, err := checkBaseURL("hub URL", hubRaw)
	if err != nil {
		return nil, err
	}
	switch hub.Scheme {
	case "ws":
		hub.Scheme = "http"
	case "wss":
		hub.Scheme = "https"
	}
	// The session cookies go to the exact API origin and nowhere else.
	if auth == AuthSession && (hub.Scheme != api.Scheme || hub.Host != api.Host) {
		return nil, fmt.Errorf("hub URL %s: with session authentication the hub must be on the API origin %s://%s (the session cookie goes nowhere else)",
			hub.Redacted(), api.Scheme, api.Host)
	}
	h := &Host{api: api, hub: hub, auth: auth, diagnostics: opts.Diagnostics}
	app, err := fs.Sub(web.Dist, "dist/workplace")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	apiRelay := newRelay(auth, "/api", api.JoinPath("api"), opts.Log)
	mux.Handle("/api/", apiRelay)
	hubRelay := newRelay(auth, "/"+HubPath, hub, opts.Log)
	mux.Handle("/"+HubPath, hubRelay)
	mux.Handle("/"+HubPath+"/", hubRelay)
	mux.HandleFunc("GET /config.json", h.config)
	mux.Handle("/", appHandler(app))
	// Cross-site state-changing requests never reach the relay: the browser's session must not
	// act for another site's page.
	csrf := http.NewCrossOriginProtection()
	csrf.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeProblem(w, http.StatusForbidden, "Forbidden", "cross-origin request refused")
	}))
	h.handler = csrf.Handler(mux)
	return h, nil
}

// Handler serves the app, /config.json and the relay.
func (h *Host) Handler() http.Handler { return h.handler }

// APIBaseURL and HubURL are the resolved addresses of the server.
func (h *Host) APIBaseURL() string { return h.api.String() }
func (h *Host) HubURL() string     { return h.hub.String() }

// AppConfig is what the app reads at start from /config.json.
type AppConfig struct {
	// Authentication is session or bearer.
	Authentication string `json:"authentication"`
	// APIBaseURL is where the browser signs in (session) or creates a token (bearer).
	APIBaseURL string `json:"apiBaseUrl"`
	// HubPath is the hub's path on this host.
	HubPath string `json:"hubPath"`
	// Diagnostics: see Options.Diagnostics.
	Diagnostics bool `json:"diagnostics,omitempty"`
}

func (h *Host) config(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(AppConfig{Authentication: h.auth, APIBaseURL: h.api.String(), HubPath: "/" + HubPath, Diagnostics: h.diagnostics})
}

// appHandler serves the built single-page app: its files as they are, and index.html for every
// route of the app (/, /w/{workspace}/d/{dashboard}, ...).
func appHandler(app fs.FS) http.Handler {
	index, indexErr := fs.ReadFile(app, "index.html")
	files := http.FileServerFS(app)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeProblem(w, http.StatusMethodNotAllowed, "Method Not Allowed", "the Workplace app is read with GET")
			return
		}
		setPageHeaders(w)
		name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
		if name != "" && name != "index.html" {
			if st, err := fs.Stat(app, name); err == nil && !st.IsDir() {
				if strings.HasPrefix(name, "assets/") {
					// Built assets are named after their content.
					w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
				}
				files.ServeHTTP(w, r)
				return
			}
			if path.Ext(name) != "" {
				http.NotFound(w, r)
				return
			}
		}
		if indexErr != nil {
			http.Error(w, "the Workplace app is not built", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(index))
	})
}

func setPageHeaders(w http.ResponseWriter) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'")
}
