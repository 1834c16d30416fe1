package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi/swaggerui"
	"platform.dev/platform/apiserver/identity"
	connlimit "platform.dev/platform/apiserver/listener"
	"platform.dev/platform/apiserver/oidc"
	"platform.dev/platform/apiserver/packprojects"
	"platform.dev/platform/apiserver/packs"
	"platform.dev/platform/apiserver/ratelimit"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/apiserver/sourceregistries"
	"platform.dev/platform/apiserver/tools"
	"platform.dev/platform/apiserver/triggers"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/apiserver/workplace"
	"platform.dev/platform/internal/config"
	"platform.dev/platform/internal/version"
)

// DefaultAddr is where the service API listens unless told otherwise.
const DefaultAddr = "127.0.0.1:5100"

// OpenAPIPath serves the OpenAPI 3.1 document as <path>.json (and .yaml).
const OpenAPIPath = "/openapi/v1"

// Options are the dependencies of the service API.
type Options struct {
	Config *config.Config
	// Kube reads and writes Management objects on behalf of callers: the rules of the kube API's
	// admission apply to what it writes as they do to kubectl.
	Kube client.Client
	// PlatformKube writes what only the platform itself writes (published Flow versions and
	// Entries, system-managed Direct Agent Flows), with the control plane's loopback identity.
	// Optional: Kube when unset.
	PlatformKube client.Client
	// Reads answers the reads every request makes (its workspace's namespace; the published
	// version a submission pins) from informers first, so that the hot path does not ask the kube
	// API each time. Optional: Kube when unset.
	Reads client.Reader
	// Ready reports whether the platform can serve requests (the kube API and its storage).
	Ready func(context.Context) error
	// Identity holds local accounts, sessions and tenancy. Optional: without it no caller signs in
	// in Local or Hybrid mode and the /api/auth routes answer 404.
	Identity *identity.Service
	// ProvisionWorkspace creates what a new workspace needs outside the identity store (its kube
	// namespace). Required with Identity.
	ProvisionWorkspace func(context.Context, identity.Workspace) error
	// SeedFirstWorkspace gives the first workspace, created at bootstrap, what a newcomer starts
	// with (the demo Entries on its home Dashboard). Optional.
	SeedFirstWorkspace func(context.Context, identity.Workspace) error
	// Work is the Work plane's store. Optional: without it the Work routes answer 503.
	Work *work.Store
	// Workplace is the Workplace plane's store (conversations, Tasks, notifications). Optional:
	// without it the Workplace routes are not served.
	Workplace *workplace.Store
	// Executor is woken when a run becomes runnable, so it starts without waiting for a poll,
	// and reserves a worker for a submission that it starts at once. Optional.
	Executor Executor
	// Tools reaches tool providers (discovery, connectivity tests, calls at /mcp). Optional:
	// without it those routes answer 503.
	Tools *tools.Manager
	// Log receives what the service API records of Work and Runtime requests (ids, never input
	// or prompt text). Optional: discarded when unset.
	Log logr.Logger
	// Secrets writes Secret values into their Vaults and opens them for model provider calls.
	// Optional: without it the value routes and the Local Vault initialization answer 503.
	Secrets *secrets.Service
	// Triggers fires Run now and reads the occurrence history of Triggers. Optional: without it
	// those routes answer 503.
	Triggers *triggers.Service
	// PackProjects stores the Pack projects of the Composer. Optional: without it creating,
	// listing and downloading projects answer 503 (the inventory and the preview still work).
	PackProjects *packprojects.Store
	// DocumentOnly builds the server only to describe its routes (`platform openapi`): no
	// backend is needed, and its handler is never served.
	DocumentOnly bool
	// Packs stores Pack archives by digest and binding selections. Optional: without it the Pack
	// routes that write answer 503.
	Packs *packs.Store
	// Registries is the Source registry cache and refresh history. Optional: without it the
	// history and trust routes answer 503.
	Registries *sourceregistries.Store
	// RegistryFetchers makes a registration's guarded registry client (internal/registry).
	// Optional: without it a refresh answers 503.
	RegistryFetchers func(context.Context, *platformv1.SourceRegistry) (sourceregistries.Fetcher, error)
	// RegistryErrorCode is the stable code of a registry client error (registry.CodeOf).
	RegistryErrorCode func(error) string
	// RegistryRefresher runs the refreshes, shared with the periodic worker so that both are
	// serialized per registration; one over Registries is made when nil.
	RegistryRefresher *sourceregistries.Refresher
	// RateLimits counts requests and started runs against the limits of workspaces and tokens
	// (Platform:Limits:..., namespace annotations). Optional: without it nothing is limited.
	RateLimits *ratelimit.Counter
}

// Server is the service API.
type Server struct {
	// rateLimits counts against limitDefaults and the workspaces' own limits; nil counts none.
	rateLimits    *ratelimit.Counter
	limitDefaults ratelimit.Limits
	// pacer spreads a flooding access token's admitted requests over their window.
	pacer   ratelimit.Pacer
	api     huma.API
	mux     *http.ServeMux
	handler http.Handler
	kube    client.Client
	reads   client.Reader
	// platformKube writes what only the platform writes (see Options.PlatformKube).
	platformKube client.Client
	ready        func(context.Context) error
	// config holds, among others, model provider API keys (AI:Providers:<name>:ApiKey).
	config *config.Config

	mode       string
	identity   *identity.Service
	provision  func(context.Context, identity.Workspace) error
	seedFirst  func(context.Context, identity.Workspace) error
	work       *work.Store
	workplace  *workplace.Store
	executor   Executor
	tools      *tools.Manager
	log        logr.Logger
	secrets    *secrets.Service
	triggers   *triggers.Service
	projects   *packprojects.Store
	packs      *packs.Store
	registries *sourceregistries.Store
	refresher  *sourceregistries.Refresher
	fetchers   func(context.Context, *platformv1.SourceRegistry) (sourceregistries.Fetcher, error)
	// stopping is closed when Serve begins its shutdown, so that streams end instead of holding
	// the shutdown up.
	stopping     chan struct{}
	stoppingOnce sync.Once
	// onShutdown run when Serve shuts down, beside the drain of the requests (WebSocket
	// connections, which the HTTP server no longer tracks once upgraded).
	onShutdown []func(context.Context)
	// ownOriginCheck are the route patterns that check the Origin themselves (the hub's CORS).
	ownOriginCheck []string
	// notFoundPage answers a browser's page that no route serves (see ServeNotFoundPage).
	notFoundPage http.Handler
	// capture keeps recent exchanges for diagnosis; nil unless enabled (Development only).
	capture *PayloadCapture

	// oidc and tokens are the OpenID Provider and its bearer token verifier, in modes Oidc and
	// Hybrid only.
	oidc   *oidc.Provider
	tokens *oidc.Verifier
}

// MetricsSetting, when "true", serves the Prometheus metrics at /metrics on the service API's
// port, to anyone who reaches that port. Off by default: the service port faces the API's users,
// and the metrics (the platform's load, its failures) are the operator's; `--metrics-addr`
// serves the same metrics on a listener of the operator's choosing instead.
const MetricsSetting = "Platform:Metrics:ServiceApi"

// Area registers the routes of one functional area of the service API (identity, management,
// work, ...) on the server. Each area lives in its own package beside this one.
type Area func(*Server)

// New builds the service API with the routes of areas and checks its configuration.
func New(opts Options, areas ...Area) (*Server, error) {
	if opts.Config == nil || !opts.DocumentOnly && (opts.Kube == nil || opts.Ready == nil) {
		return nil, errors.New("httpapi: Config, Kube and Ready are required")
	}
	if opts.Identity != nil && opts.ProvisionWorkspace == nil {
		return nil, errors.New("httpapi: ProvisionWorkspace is required with Identity")
	}
	mode, err := authenticationMode(opts.Config)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	humaConfig := huma.DefaultConfig("platform", version.Version)
	// The contract document and its browser are served in Development or Testing only (the
	// spec's endpoint table); `platform openapi` prints the same document everywhere.
	humaConfig.OpenAPIPath = ""
	if opts.Config.IsDevelopmentOrTesting() {
		humaConfig.OpenAPIPath = OpenAPIPath
	}
	// huma's own docs page loads its scripts from a CDN; the platform serves its own copy.
	humaConfig.DocsPath = ""
	humaConfig.Info.Description = "The service API of the work-delegation platform: Management resources, Flows, Work and Runtime, and identity administration."
	humaConfig.Components.SecuritySchemes = securitySchemes()
	humaConfig.Tags = tags
	// The $schema links of huma's default transformers are not part of our contract.
	humaConfig.CreateHooks = nil
	humaConfig.Transformers = append(humaConfig.Transformers, noteFailures)
	humaConfig.SchemasPath = ""
	api := humago.New(mux, humaConfig)
	// Provider options and JSON Schemas are free-form JSON objects, whatever Go type holds them.
	api.OpenAPI().Components.Schemas.RegisterTypeAlias(reflect.TypeFor[runtime.RawExtension](), reflect.TypeFor[map[string]any]())
	// A duration is written as a Go duration string ("30s", "1h"), a declared default answer as any
	// JSON value (a string, a boolean), as in manifests.
	api.OpenAPI().Components.Schemas.RegisterTypeAlias(reflect.TypeFor[metav1.Duration](), reflect.TypeFor[string]())
	api.OpenAPI().Components.Schemas.RegisterTypeAlias(reflect.TypeFor[apiextensionsv1.JSON](), reflect.TypeFor[any]())
	s := &Server{api: api, mux: mux, kube: opts.Kube, ready: opts.Ready, mode: mode, identity: opts.Identity, provision: opts.ProvisionWorkspace, seedFirst: opts.SeedFirstWorkspace,
		work: opts.Work, workplace: opts.Workplace, executor: opts.Executor, tools: opts.Tools, log: opts.Log, stopping: make(chan struct{}), config: opts.Config, secrets: opts.Secrets,
		triggers: opts.Triggers, projects: opts.PackProjects, packs: opts.Packs,
		registries: opts.Registries, fetchers: opts.RegistryFetchers}
	if s.refresher = opts.RegistryRefresher; s.refresher == nil && opts.Registries != nil {
		s.refresher = &sourceregistries.Refresher{Store: opts.Registries, ErrorCode: opts.RegistryErrorCode}
	}
	if s.platformKube = opts.PlatformKube; s.platformKube == nil {
		s.platformKube = opts.Kube
	}
	if s.reads = opts.Reads; s.reads == nil {
		s.reads = opts.Kube
	}
	if s.log.GetSink() == nil {
		s.log = logr.Discard()
	}
	if err := s.configureOIDC(opts.Config); err != nil {
		return nil, err
	}
	if s.capture, err = payloadCaptureFrom(opts.Config); err != nil {
		return nil, err
	}
	if s.limitDefaults, err = limitDefaultsFrom(opts.Config); err != nil {
		return nil, err
	}
	s.rateLimits = opts.RateLimits
	api.UseMiddleware(checkInput(api), s.limitBearer(api), s.authenticate(api), s.authorize(api), s.limit(api))

	s.registerHealth()
	for _, area := range areas {
		area(s)
	}
	if opts.Config.IsDevelopmentOrTesting() {
		swaggerui.Register(mux, "/swagger", OpenAPIPath+".json")
	}
	serveMetrics, err := strconv.ParseBool(strings.TrimSpace(opts.Config.GetOr(MetricsSetting, "false")))
	if err != nil {
		return nil, fmt.Errorf("%s must be true or false", MetricsSetting)
	}
	if serveMetrics {
		// Run, step and controller metrics for Prometheus; they hold counts by type and state only.
		mux.Handle("GET /metrics", promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("/api/", s.noRoute)
	// Cross-site state-changing requests (by Sec-Fetch-Site, else Origin against Host) are
	// refused: the session cookie must not act for another site's page.
	csrf := http.NewCrossOriginProtection()
	for _, pattern := range s.ownOriginCheck {
		csrf.AddInsecureBypassPattern(pattern)
	}
	csrf.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		WriteProblem(w, http.StatusForbidden, "cross-origin request refused")
	}))
	s.handler = answerProblems(csrf.Handler(mux), s.notFoundPage, s.log)
	if s.capture != nil {
		s.handler = s.capture.Wrap(s.handler)
	}
	// A token that floods is refused before anything else, the capture of exchanges included.
	s.handler = s.refuseRemembered(s.handler)
	return s, nil
}

// CheckOriginItself exempts the routes of pattern from the cross-origin protection of
// state-changing requests: they check the Origin themselves (the hub answers CORS for the
// configured Workplace origin). Areas call it while they register their routes.
func (s *Server) CheckOriginItself(pattern string) {
	s.ownOriginCheck = append(s.ownOriginCheck, pattern)
}

// ServeNotFoundPage makes h answer a browser's navigation (GET, Accept: text/html, outside
// /api/) to a path no route serves, instead of the Problem Details 404 every other caller gets.
// Areas call it while they register their routes.
func (s *Server) ServeNotFoundPage(h http.Handler) { s.notFoundPage = h }

// OnShutdown runs fn when Serve shuts down, with the deadline of the shutdown, beside the drain
// of the requests; Serve returns once fn did.
func (s *Server) OnShutdown(fn func(context.Context)) { s.onShutdown = append(s.onShutdown, fn) }

// PayloadCapture is the capture of recent exchanges, nil unless enabled (Development only).
func (s *Server) PayloadCapture() *PayloadCapture { return s.capture }

// Mux is the router, for the areas that serve plain net/http handlers (web pages).
func (s *Server) Mux() *http.ServeMux { return s.mux }

// Kube reads and writes Management objects on behalf of callers, held to the kube API's
// admission rules (see Options.Kube).
func (s *Server) Kube() client.Client { return s.kube }

// Reads answers hot reads from informers first (see Options.Reads).
func (s *Server) Reads() client.Reader { return s.reads }

// PlatformKube writes what only the platform itself writes: published Flow versions and Entries
// and system-managed Direct Agent Flows.
func (s *Server) PlatformKube() client.Client { return s.platformKube }

// Config is the platform's configuration.
func (s *Server) Config() *config.Config { return s.config }

// Mode is the authentication mode (Platform:Authentication:Mode).
func (s *Server) Mode() string { return s.mode }

// Identity is the identity service; nil when the server runs without one.
func (s *Server) Identity() *identity.Service { return s.identity }

// Provision creates what a new workspace needs outside the identity store.
func (s *Server) Provision(ctx context.Context, ws identity.Workspace) error {
	return s.provision(ctx, ws)
}

// ProvisionFirst provisions the first workspace, at bootstrap: as every workspace, then with what
// a newcomer starts with (Options.SeedFirstWorkspace).
func (s *Server) ProvisionFirst(ctx context.Context, ws identity.Workspace) error {
	if err := s.provision(ctx, ws); err != nil {
		return err
	}
	if s.seedFirst == nil {
		return nil
	}
	return s.seedFirst(ctx, ws)
}

// Work is the Work plane's store; nil when the server runs without one.
func (s *Server) Work() *work.Store { return s.work }

// Workplace is the Workplace plane's store; nil when the server runs without one.
func (s *Server) Workplace() *workplace.Store { return s.workplace }

// Executor is this process's flow executor; nil when there is none.
func (s *Server) Executor() Executor { return s.executor }

// Executor is what the API asks of the flow executor of its process.
type Executor interface {
	Wake()
	ReserveWithin(ctx context.Context, workspace string, wait time.Duration) (work.Reservation, bool)
}

// workerWait bounds how long a submission or answer whose client waits for its run waits for a
// worker of its workspace to be handed over when none is free, before it queues its run for any
// worker. Runs that make no slow call free a worker within milliseconds, which saves the waiting
// run two commits; against runs waiting on a model for seconds, a quarter of a second is what
// its run's listing is delayed by at most, for a client that waits longer for its result anyway.
const workerWait = 250 * time.Millisecond

// Reserve takes a free worker of this process's executor for a run of workspace about to become
// runnable (submitted or answered): the run is committed leased to it (the returned lease) and
// StartReserved starts it at once, without the commit of a claim and the wait for a worker to
// wake. A caller that waits for the run to settle (waitSeconds > 0) waits up to workerWait for a
// worker when none is free. Both are nil when no worker was had; the run is then left for any
// worker to claim.
func (s *Server) Reserve(ctx context.Context, workspace string, waitSeconds int) (work.Reservation, *work.Lease) {
	if s.executor == nil {
		return nil, nil
	}
	var wait time.Duration
	if waitSeconds > 0 {
		wait = workerWait
	}
	r, ok := s.executor.ReserveWithin(ctx, workspace, wait)
	if !ok {
		return nil, nil
	}
	lease := r.Lease()
	return r, &lease
}

// Respond answers a pending action (r without a Lease). With a free worker of this process's
// executor, the answer commits with the resumed run's first transition and the worker goes on
// executing the run (work.Reservation.Respond), which saves the run a commit and the wait for a
// worker (one is waited for as Reserve does); otherwise the store answers it and the executor is
// woken for the resumed run.
func (s *Server) Respond(ctx context.Context, r work.Response, waitSeconds int) (work.Responded, error) {
	if reserved, _ := s.Reserve(ctx, r.WorkspaceID, waitSeconds); reserved != nil {
		return reserved.Respond(ctx, r)
	}
	action, run, token, err := s.work.Respond(ctx, r)
	if s.executor != nil && err == nil {
		s.executor.Wake()
	}
	return work.Responded{Action: action, Run: run, Token: token}, err
}

// StartReserved starts run on the worker reserved for it when the run was committed leased to it
// (err nil and the run runnable under that lease), and otherwise gives the worker back and wakes
// the executor for whatever became runnable. Once started, it returns what waits for the worker
// to settle the run (work.Reservation.Start); nil otherwise.
func (s *Server) StartReserved(r work.Reservation, run work.FlowRun, err error) func(context.Context, time.Duration) (work.FlowRun, bool) {
	if r != nil && err == nil && run.LeaseOwner == r.Lease().Owner &&
		(run.State == work.StatePending || run.State == work.StateRunning) {
		return r.Start(run)
	}
	if r != nil {
		r.Cancel()
	}
	if s.executor != nil && err == nil {
		s.executor.Wake()
	}
	return nil
}

// Tools reaches tool providers; nil when the server runs without it.
func (s *Server) Tools() *tools.Manager { return s.tools }

// Secrets is the service of Secret values and Vaults; nil when the server runs without one.
func (s *Server) Secrets() *secrets.Service { return s.secrets }

// Triggers fires Run now and reads the history of Triggers; nil when the server runs without it.
func (s *Server) Triggers() *triggers.Service { return s.triggers }

// PackProjects stores the Composer's Pack projects; nil when the server runs without it.
func (s *Server) PackProjects() *packprojects.Store { return s.projects }

// Packs is the store of Pack archives and binding selections; nil when the server has none.
func (s *Server) Packs() *packs.Store { return s.packs }

// Registries is the Source registry cache and history; nil when the server has none.
func (s *Server) Registries() *sourceregistries.Store { return s.registries }

// RegistryRefresher runs refreshes one at a time per registration, and the fetcher maker of a
// registration; nil when the server has no cache or no registry client.
func (s *Server) RegistryRefresher() (*sourceregistries.Refresher, func(context.Context, *platformv1.SourceRegistry) (sourceregistries.Fetcher, error)) {
	return s.refresher, s.fetchers
}

// Log records what the service API does (ids, never input or prompt text).
func (s *Server) Log() logr.Logger { return s.log }

// OIDC is the OpenID Provider of modes Oidc and Hybrid, nil otherwise.
func (s *Server) OIDC() *oidc.Provider { return s.oidc }

// Stopping is closed when the server begins its shutdown, so that streams end instead of holding
// it up.
func (s *Server) Stopping() <-chan struct{} { return s.stopping }

// AddTags adds the functional tags of an area to the OpenAPI document.
func (s *Server) AddTags(tags ...*huma.Tag) {
	s.api.OpenAPI().Tags = append(s.api.OpenAPI().Tags, tags...)
}

// Handler serves every route.
func (s *Server) Handler() http.Handler { return s.handler }

// API is the huma API, for the OpenAPI document in tests and tools.
func (s *Server) API() huma.API { return s.api }

// Serve answers on listener until ctx ends, then drains requests for up to 10 s.
func (s *Server) Serve(ctx context.Context, listener net.Listener) error {
	// Every connection is bounded in time (connlimit.Server; the listener caps how many are
	// open). A connection a handler takes over for a long life (the hub's WebSockets) asks the
	// listener never to close it to make room (connlimit.Keep).
	server := connlimit.Server(s.handler)
	done := make(chan error, 1)
	go func() { done <- server.Serve(listener) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	s.stoppingOnce.Do(func() { close(s.stopping) })
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var hooks sync.WaitGroup
	for _, fn := range s.onShutdown {
		hooks.Go(func() { fn(shutdownCtx) })
	}
	defer hooks.Wait()
	if err := server.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("service API shutdown: %w", err)
	}
	return nil
}

// tagHealth is the functional tag of the health routes; each area adds its own.
const tagHealth = "Health"

var tags = []*huma.Tag{
	{Name: tagHealth, Description: "Liveness and readiness of the service."},
}

type healthOutput struct {
	Body struct {
		Status string `json:"status" enum:"ok" doc:"ok when the check passes"`
	}
}

func (s *Server) registerHealth() {
	huma.Register(s.api, huma.Operation{
		OperationID: "get-liveness", Method: http.MethodGet, Path: "/livez", Tags: []string{tagHealth},
		Summary: "Liveness: the process serves requests",
	}, func(context.Context, *struct{}) (*healthOutput, error) {
		out := &healthOutput{}
		out.Body.Status = "ok"
		return out, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "get-readiness", Method: http.MethodGet, Path: "/readyz", Tags: []string{tagHealth},
		Summary: "Readiness: the management store and the SQL store answer", Errors: []int{http.StatusServiceUnavailable},
	}, func(ctx context.Context, _ *struct{}) (*healthOutput, error) {
		// The reason is the Ready function's own words: what is down, never a cause's details.
		if err := s.ready(ctx); err != nil {
			return nil, huma.ErrorWithHeaders(huma.Error503ServiceUnavailable("not ready: "+err.Error()),
				http.Header{"Retry-After": []string{RetryAfterSeconds}})
		}
		out := &healthOutput{}
		out.Body.Status = "ok"
		return out, nil
	})
}
