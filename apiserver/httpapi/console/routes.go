package console

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/internal/returnurl"
	"platform.dev/platform/workplace/web"
)

// WorkplaceURLSetting is where the Workplace UI is, for the Console's links to it and for
// /workplace/..., which sign-in returns through (default DefaultWorkplaceURL).
const (
	WorkplaceURLSetting = "Platform:Workplace:Url"
	DefaultWorkplaceURL = "http://127.0.0.1:5180/"
)

// AssetsPath is where the Console's built files are served.
const AssetsPath = "/console/"

// Pages are the routes of the Console app; each serves the app, which draws the page.
var Pages = []string{
	"/{$}",
	"/tasks",
	"/usage",
	"/cleanup",
	"/triggers",
	"/triggers/-/new",
	"/triggers/{name}",
	"/triggers/{name}/edit",
	"/runs/{runId}",
	"/entries",
	"/entries/{name}",
	"/packs",
	"/packs/compose",
	"/packs/{publisher}/{name}",
	"/settings/profile",
	"/settings/organization/workspaces",
	"/settings/organization/members",
	"/settings/organization/members/{principalId}",
	"/settings/organization/access",
	"/settings/organization/security-audit",
	"/settings/source-registries",
	"/settings/source-registries/discovery",
}

type console struct {
	*httpapi.Server
	app       fs.FS
	index     []byte
	workplace *url.URL
}

// Routes registers the Console's pages and assets on the server's router.
func Routes(s *httpapi.Server) {
	app, err := fs.Sub(web.Dist, "dist/console")
	if err != nil {
		panic(err)
	}
	c := &console{Server: s, app: app}
	c.index, _ = fs.ReadFile(app, "index.html")
	c.workplace, err = url.Parse(s.Config().GetOr(WorkplaceURLSetting, DefaultWorkplaceURL))
	if err != nil || (c.workplace.Scheme != "http" && c.workplace.Scheme != "https") || c.workplace.Host == "" {
		c.workplace, _ = url.Parse(DefaultWorkplaceURL)
	}
	mux := s.Mux()
	for _, p := range Pages {
		mux.HandleFunc("GET "+p, c.page)
	}
	mux.Handle("GET "+AssetsPath, http.StripPrefix(AssetsPath, c.assets()))
	mux.HandleFunc("GET /console/config.json", c.config)
	mux.HandleFunc("GET /workplace/{path...}", c.toWorkplace)
	// A browser's page that no route serves is the app, which shows its own "not found" page.
	s.ServeNotFoundPage(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { c.serveApp(w, r, http.StatusNotFound) }))
}

// page serves the app to a signed-in browser and sends an anonymous one to sign in first.
func (c *console) page(w http.ResponseWriter, r *http.Request) {
	c.serveApp(w, r, http.StatusOK)
}

func (c *console) serveApp(w http.ResponseWriter, r *http.Request, status int) {
	if c.Sessions() && !c.signedIn(r) {
		back, err := returnurl.Normalize(r.URL.RequestURI())
		if err != nil {
			back = "/"
		}
		http.Redirect(w, r, "/login?returnUrl="+url.QueryEscape(back), http.StatusSeeOther)
		return
	}
	if len(c.index) == 0 {
		http.Error(w, "the Console app is not built", http.StatusInternalServerError)
		return
	}
	setPageHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if status != http.StatusOK {
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			_, _ = w.Write(c.index)
		}
		return
	}
	http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(c.index))
}

func (c *console) signedIn(r *http.Request) bool {
	cookie, err := r.Cookie(httpapi.SessionCookie)
	if err != nil || cookie.Value == "" {
		return false
	}
	_, err = c.Identity().Authenticate(r.Context(), cookie.Value)
	return err == nil
}

func (c *console) assets() http.Handler {
	files := http.FileServerFS(c.app)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if st, err := fs.Stat(c.app, name); err != nil || st.IsDir() || name == "index.html" {
			http.NotFound(w, r)
			return
		}
		setPageHeaders(w)
		if strings.HasPrefix(name, "assets/") {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		}
		files.ServeHTTP(w, r)
	})
}

// ConsoleConfig is what the Console app reads at start.
type ConsoleConfig struct {
	// WorkplaceURL is where the Console links Tasks and conversations to.
	WorkplaceURL string `json:"workplaceUrl"`
}

func (c *console) config(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(ConsoleConfig{WorkplaceURL: c.workplace.String()})
}

// toWorkplace sends the browser to the same path on the configured Workplace: sign-in and
// bootstrap accept only local return URLs, so the Workplace asks them to return here. Only the
// configured origin is ever a target.
func (c *console) toWorkplace(w http.ResponseWriter, r *http.Request) {
	local, err := returnurl.Normalize("/" + r.PathValue("path"))
	if err != nil {
		local = "/"
	}
	u, _ := url.Parse(local)
	target := *c.workplace
	target.Path = strings.TrimSuffix(target.Path, "/") + u.Path
	target.RawQuery = r.URL.RawQuery
	http.Redirect(w, r, target.String(), http.StatusSeeOther)
}

func setPageHeaders(w http.ResponseWriter) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'")
}
