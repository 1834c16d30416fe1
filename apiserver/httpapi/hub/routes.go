package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-logr/logr"

	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/hub"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/listener"
	"platform.dev/platform/apiserver/ratelimit"
	"platform.dev/platform/internal/config"
)

// Path is where the hub is served; negotiate is under it.
const Path = "/hubs/workplace"

// Settings of the hub (Platform:Hub:...) and their defaults.
const (
	SettingMaxConnections             = "Platform:Hub:MaxConnections"
	SettingMaxConnectionsPerPrincipal = "Platform:Hub:MaxConnectionsPerPrincipal"
	SettingMaxMessageBytes            = "Platform:Hub:MaxMessageBytes"
	SettingSendQueueBytes             = "Platform:Hub:SendQueueBytes"
	SettingRevalidateSeconds          = "Platform:Hub:RevalidateSeconds"
	SettingEventRetentionMinutes      = "Platform:Hub:EventRetentionMinutes"
	SettingAllowedOrigins             = "Platform:Hub:AllowedOrigins"
	// SettingWorkplaceURL is where the Workplace UI is served (the setting the server's sign-in
	// redirects use too): its origin may always call the hub with the browser's credentials.
	SettingWorkplaceURL = "Platform:Workplace:Url"
	// DefaultWorkplaceURL is `platform workplace`'s default address.
	DefaultWorkplaceURL = "http://127.0.0.1:5180/"
)

// allowedOrigins are the configured Workplace's origin and those of Platform:Hub:AllowedOrigins
// (a comma-separated list of scheme://host[:port]).
func allowedOrigins(cfg *config.Config, log logr.Logger) []string {
	workplaceURL := strings.TrimSpace(cfg.Get(SettingWorkplaceURL))
	if workplaceURL == "" {
		workplaceURL = DefaultWorkplaceURL
	}
	var out []string
	if u, err := url.Parse(workplaceURL); err == nil && u.Scheme != "" && u.Host != "" {
		out = append(out, u.Scheme+"://"+u.Host)
	} else {
		log.Info("ignoring an invalid setting: the Workplace's origin may not call the hub from a browser", "setting", SettingWorkplaceURL)
	}
	return append(out, strings.Split(cfg.Get(SettingAllowedOrigins), ",")...)
}

// Routes serves the hub when the server has the Workplace (whose outbox it sends).
func Routes(s *httpapi.Server) {
	if s.Workplace() == nil || s.Work() == nil {
		return
	}
	log := s.Log().WithName("hub")
	cfg := s.Config()
	// The hub holds at most three quarters of the connections the service API's listener takes,
	// so that its idle sockets never crowd out the other requests.
	maxConnections := min(domain.DefaultMaxConnections, max(64, listener.ProcessBudget().ServiceAPI*3/4))
	l := &listeners{server: s, ttl: time.Duration(setting(cfg, log, SettingRevalidateSeconds, 5, 3600)) * time.Second / 2,
		cache: map[string]checked{}}
	h, err := domain.New(domain.Options{
		Source:                     s.Workplace(),
		Changes:                    s.Work().Changes(),
		Authenticate:               l.authenticate,
		Problem:                    httpapi.WriteProblem,
		Failed:                     func(r *http.Request, cause error) { httpapi.NoteFailure(r.Context(), cause) },
		Upgraded:                   func(r *http.Request) { listener.Keep(r.Context()) },
		AllowedOrigins:             allowedOrigins(cfg, log),
		MaxConnections:             setting(cfg, log, SettingMaxConnections, maxConnections, 1_000_000),
		MaxConnectionsPerPrincipal: setting(cfg, log, SettingMaxConnectionsPerPrincipal, domain.DefaultMaxConnectionsPerPrincipal, 1_000_000),
		MaxMessageBytes:            int64(setting(cfg, log, SettingMaxMessageBytes, domain.DefaultMaxMessageBytes, 16<<20)),
		SendQueueBytes:             setting(cfg, log, SettingSendQueueBytes, domain.DefaultSendQueueBytes, 1<<30),
		Revalidate:                 time.Duration(setting(cfg, log, SettingRevalidateSeconds, 5, 3600)) * time.Second,
		Retention:                  time.Duration(setting(cfg, log, SettingEventRetentionMinutes, 60, 60*24*365)) * time.Minute,
		Log:                        log,
	})
	if err != nil {
		panic(err) // every dependency is given above
	}
	mux := s.Mux()
	mux.HandleFunc("POST "+Path+"/negotiate", h.ServeNegotiate)
	mux.HandleFunc("OPTIONS "+Path+"/negotiate", h.ServePreflight)
	mux.HandleFunc("GET "+Path, h.ServeWebSocket)
	// negotiate answers CORS for the configured Workplace origins and refuses other origins itself.
	s.CheckOriginItself("POST " + Path + "/negotiate")
	s.OnShutdown(h.Shutdown)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.Stopping()
		cancel()
	}()
	go h.Run(ctx)
	// On PostgreSQL transactions leave their events for the process that numbers the outbox:
	// every replica runs it, one at a time, and the hub sends the events once numbered.
	go s.Workplace().NumberOutbox(ctx, log.WithName("outbox"))
}

// setting reads a positive integer setting up to limit, else def.
func setting(cfg *config.Config, log logr.Logger, key string, def, limit int) int {
	v := strings.TrimSpace(cfg.Get(key))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > limit {
		log.Info("ignoring an invalid setting; using the default", "setting", key, "default", def)
		return def
	}
	return n
}

// listeners authenticates the hub's callers with the platform's credentials and checks them again
// while they listen. Connections of one credential share the answers for a short while, so that
// many of them cost one check.
type listeners struct {
	server *httpapi.Server
	ttl    time.Duration

	mu    sync.Mutex
	cache map[string]checked
}

type checked struct {
	at     time.Time
	denied string
}

func (l *listeners) authenticate(r *http.Request) (domain.Caller, error) {
	// A credential refused lately whose window is still full is refused again before its
	// authentication: a flooding token or session costs no lookup of its token, session or
	// Principal (the service API's and the kube API's refusals do the same).
	if counter := l.server.RateLimits(); counter != nil && counter.RemembersBearers() {
		if cred, ok := l.server.CredentialOf(r); ok {
			if refusal := counter.BearerRefused(cred.Digest(), false); refusal != nil {
				return nil, &domain.RateLimited{Reason: refusalDetail(refusal, refusal.Limit == ratelimit.TokenRequests && !cred.IsBearer()),
					RetryAfterSeconds: refusal.RetryAfterSeconds()}
			}
		}
	}
	caller, cred, ok, err := l.server.AuthenticateRequest(r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, domain.ErrUnauthenticated
	}
	if caller.ID == "" {
		// An OIDC subject nobody linked: authenticated, but nobody to listen as.
		return nil, domain.ErrUnauthenticated
	}
	return &hubCaller{listeners: l, caller: caller, cred: cred}, nil
}

// hubCaller is one connection's caller.
type hubCaller struct {
	*listeners
	caller httpapi.Caller
	cred   httpapi.Credential

	// limits are the rate limits of the caller's workspace (workspaceID), read at limitsAt and
	// kept for the listeners' ttl: the invocations of a connection do not resolve them each.
	limitsMu    sync.Mutex
	limits      ratelimit.Limits
	workspaceID string
	limitsAt    time.Time
}

// principalCounter is the per-caller counter of a Principal who listens with a session (or
// another credential than a personal access token): the hub counts such a caller as it counts a
// token, so that one person's connections cannot flood their workspace either.
func principalCounter(principalID string) string { return "principal:" + principalID }

// refusalDetail says why a request was refused, for people: a signed-in Principal's own limit is
// not an access token's.
func refusalDetail(r *ratelimit.Refusal, principal bool) string {
	if principal {
		return fmt.Sprintf("the limit of %d requests per second of each signed-in person on the hub is reached; retry after %d s",
			r.Allowed, r.RetryAfterSeconds())
	}
	return r.Detail()
}

// Limit holds every caller's negotiations, upgrades and invocations to the rate limits, on the
// service API's counters (hub.Limited): a personal access token's to the limits of the token and
// its workspace; a session's (or a bearer JWT's) to those of the Principal's workspace, its
// requests per second counted per Principal under the workspace's token-requests-per-second, as
// a token's are. A refused credential is remembered, so that its next requests are refused
// before their authentication while the window is full. A store that cannot count lets the
// request through.
func (l *hubCaller) Limit(ctx context.Context) (string, int) {
	counter := l.server.RateLimits()
	if counter == nil {
		return "", 0
	}
	workspace, tokenID := "", principalCounter(l.caller.ID)
	if pat := l.caller.PAT; pat != nil {
		workspace, tokenID = pat.WorkspaceID, pat.TokenID
		if r := counter.TokenRefused(pat.WorkspaceID, pat.TokenID, false); r != nil {
			return r.Detail(), r.RetryAfterSeconds()
		}
	}
	l.limitsMu.Lock()
	limits, workspaceID, at := l.limits, l.workspaceID, l.limitsAt
	l.limitsMu.Unlock()
	if at.IsZero() || time.Since(at) >= l.ttl {
		// A session's workspace is its Principal's default one (a token's, its own).
		rc, err := l.server.WorkspaceContext(ctx, l.caller, workspace)
		if err != nil {
			// Join and Check answer a caller who may no longer reach the workspace.
			return "", 0
		}
		limits, workspaceID = l.server.LimitsOf(rc), rc.WorkspaceID
		l.limitsMu.Lock()
		l.limits, l.workspaceID, l.limitsAt = limits, workspaceID, time.Now()
		l.limitsMu.Unlock()
	}
	r, err := counter.Take(ctx, workspaceID, tokenID, limits, false)
	if err != nil || r == nil {
		return "", 0
	}
	counter.RememberBearer(l.cred.Digest(), workspaceID, tokenID)
	return refusalDetail(r, l.caller.PAT == nil && r.Limit == ratelimit.TokenRequests), r.RetryAfterSeconds()
}

func (l *hubCaller) PrincipalID() string { return l.caller.ID }

func (l *hubCaller) Join(ctx context.Context, workspace string) (string, error) {
	rc, err := l.server.WorkspaceContext(ctx, l.caller, workspace)
	if err != nil {
		return "", l.refusal(err)
	}
	if !rc.Permissions.Has(identity.PermRunsRead) {
		return "", fmt.Errorf("not permitted: %s is required in workspace %s", identity.PermRunsRead, httpapi.Quote(rc.Namespace))
	}
	return rc.WorkspaceID, nil
}

// refusal is the message a client sees for a refused join: the Problem's detail, never the
// text of an internal error.
func (l *hubCaller) refusal(err error) error {
	var status huma.StatusError
	if errors.As(httpapi.Problem(err), &status) && status.GetStatus() < 500 {
		return errors.New(status.Error())
	}
	l.server.Log().Error(err, "joining a workspace on the hub failed")
	return errors.New("the workspace cannot be joined now; try again")
}

func (l *hubCaller) Check(ctx context.Context, workspaceIDs []string) (string, error) {
	slices.Sort(workspaceIDs)
	key := l.cred.Key() + "/" + strings.Join(workspaceIDs, ",")
	now := time.Now()
	l.mu.Lock()
	if c, ok := l.cache[key]; ok && now.Sub(c.at) < l.ttl {
		l.mu.Unlock()
		return c.denied, nil
	}
	l.mu.Unlock()
	denied, err := l.check(ctx, workspaceIDs)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	if len(l.cache) > 100_000 {
		for k, c := range l.cache {
			if now.Sub(c.at) >= l.ttl {
				delete(l.cache, k)
			}
		}
	}
	l.cache[key] = checked{at: now, denied: denied}
	l.mu.Unlock()
	return denied, nil
}

func (l *hubCaller) check(ctx context.Context, workspaceIDs []string) (string, error) {
	caller, ok, err := l.server.Reauthenticate(ctx, l.cred)
	if err != nil {
		return "", err
	}
	if !ok || caller.ID != l.caller.ID {
		return "the connection's credential no longer authenticates: it was revoked or expired, the session ended, or its Principal was disabled", nil
	}
	for _, id := range workspaceIDs {
		rc, err := l.server.WorkspaceContext(ctx, caller, id)
		if err != nil {
			var status huma.StatusError
			if errors.As(httpapi.Problem(err), &status) && status.GetStatus() < 500 {
				return "the caller may no longer listen to workspace " + id + ": " + status.Error(), nil
			}
			return "", err
		}
		if !rc.Permissions.Has(identity.PermRunsRead) {
			return "the caller may no longer listen to workspace " + rc.Namespace + ": " + string(identity.PermRunsRead) + " is no longer granted", nil
		}
	}
	return "", nil
}
