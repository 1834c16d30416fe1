// Package apiserver holds the `platform serve` and `platform kubeconfig` commands; the planes
// they start live in the sub-packages.
package apiserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/go-logr/logr"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/ownerscope"
	platformscheme "platform.dev/platform/apis/platform/scheme"
	"platform.dev/platform/apiserver/controlplane"
	"platform.dev/platform/apiserver/executor"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/kubeauth"
	"platform.dev/platform/apiserver/listener"
	"platform.dev/platform/apiserver/packprojects"
	"platform.dev/platform/apiserver/packs"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/ratelimit"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/apiserver/sourceregistries"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/tools"
	"platform.dev/platform/apiserver/tools/aep"
	"platform.dev/platform/apiserver/triggers"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/apiserver/workapi"
	"platform.dev/platform/apiserver/workplace"
	"platform.dev/platform/controllers"
	"platform.dev/platform/crds"
	"platform.dev/platform/internal/config"
	"platform.dev/platform/internal/demo"
	"platform.dev/platform/internal/logging"
	"platform.dev/platform/internal/readiness"
	"platform.dev/platform/internal/registry"
)

// NewServeCommand runs the platform until SIGTERM or SIGINT.
func NewServeCommand() *cobra.Command {
	var (
		opts        controlplane.Options
		etcdServers string
		httpAddr    string
		configFile  string
		databaseURL string
		ctrlOpts    = controllers.Options{LeaderElection: true}
		logLevel    logging.Level
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the platform: embedded etcd, the kube API and the controllers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if etcdServers != "" {
				opts.EtcdServers = strings.Split(etcdServers, ",")
			}
			opts.CRDs = crds.FS
			cfg, err := config.Load(configFile, os.Environ())
			if err != nil {
				return err
			}
			if err := httpapi.CheckPayloadCapture(cfg); err != nil {
				return err
			}
			if logLevel, err = logging.Resolve(cmd.Flags(), logLevel, cfg); err != nil {
				return err
			}
			logging.Setup(logLevel, cmd.ErrOrStderr())
			ctx, stop := logging.SignalContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return serve(ctx, cmd, opts, cfg, httpAddr, databaseURL, ctrlOpts)
		},
	}
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", ".data", "directory for etcd data, certificates and the admin kubeconfig")
	cmd.Flags().StringVar(&opts.KubeAddr, "kube-addr", controlplane.DefaultKubeAddr, "host:port of the kube API (TLS)")
	cmd.Flags().StringVar(&etcdServers, "etcd-servers", "", "comma-separated client URLs of an external etcd cluster instead of the embedded one")
	cmd.Flags().StringVar(&httpAddr, "http-addr", httpapi.DefaultAddr, "host:port of the service API (HTTP)")
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "postgres://user:password@host:port/database of the SQL store (default: SQLite file "+store.FileName+" in the data directory)")
	controllers.AddFlags(cmd.Flags(), &ctrlOpts)
	cmd.Flags().StringVar(&configFile, "config", "", "YAML file of settings (Platform:..., AI:...); environment variables such as Platform__Authentication__Mode override it")
	logging.AddFlag(cmd.Flags(), &logLevel, logging.Warn)
	return cmd
}

// embeddedEtcdOwner is the leader election identity of a replica that runs on its embedded etcd.
const embeddedEtcdOwner = "embedded-etcd-owner"

// executorOwnerFile is the file of the data directory that keeps the name of its executor's
// leases across restarts.
const executorOwnerFile = "executor-owner"

// dataDirExecutorOwner is the executor's lease owner of a replica that alone serves dataDir: the
// host and an id made at the directory's first start and kept in it. Another host (a directory
// copied elsewhere, a renamed host) is another owner, which only means waiting for the leases.
func dataDirExecutorOwner(dataDir string) (string, error) {
	path := filepath.Join(dataDir, executorOwnerFile)
	id, err := os.ReadFile(path)
	// An empty file (a write cut short) names nothing: a fresh id replaces it.
	if errors.Is(err, fs.ErrNotExist) || err == nil && strings.TrimSpace(string(id)) == "" {
		random := make([]byte, 8)
		_, _ = rand.Read(random)
		id = []byte(hex.EncodeToString(random))
		err = os.WriteFile(path, id, 0o600)
	}
	if err != nil {
		return "", fmt.Errorf("the executor's name in the data directory: %w", err)
	}
	host, _ := os.Hostname()
	return host + "/" + strings.TrimSpace(string(id)), nil
}

func serve(ctx context.Context, cmd *cobra.Command, opts controlplane.Options, cfg *config.Config, httpAddr, databaseURL string, ctrlOpts controllers.Options) (serveErr error) {
	// Options, the service API's port and its configuration are checked before anything starts,
	// so bad input, a busy port or a forbidden setting fails at once and leaves nothing behind.
	if err := opts.Validate(); err != nil {
		return err
	}
	if err := ctrlOpts.Validate(); err != nil {
		return err
	}
	if len(opts.EtcdServers) == 0 && ctrlOpts.ElectionIdentity == "" {
		// Only the process that owns the data directory's etcd can serve it, so this replica has
		// no rival for the Lease: after a crash, its next start holds it at once.
		ctrlOpts.ElectionIdentity = embeddedEtcdOwner
	}
	agents, err := provider.FromConfig(cfg)
	if err != nil {
		return err
	}
	execOpts, err := executor.OptionsFromConfig(cfg, executor.Options{Provider: agents})
	if err != nil {
		return err
	}
	toolOpts, err := tools.OptionsFromConfig(cfg, tools.Options{})
	if err != nil {
		return err
	}
	// The ToolProvider controller reports a STDIO provider whose command this instance will not run.
	ctrlOpts.AllowedCommands = append([]string{}, toolOpts.AllowedCommands...)
	masterKey, err := secrets.MasterKeySourceFrom(cfg, opts.DataDir)
	if err != nil {
		return err
	}
	httpListener, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return fmt.Errorf("service API: %w", err)
	}
	defer httpListener.Close()
	// Clients cannot take every descriptor: each API caps its connections, leaving headroom for
	// the store and etcd, which die without descriptors. What net/http itself answers a malformed
	// request is Problem Details, as every other answer of the service API.
	budget := listener.ProcessBudget()
	httpListener = listener.Bound(httpListener, budget.ServiceAPI)
	opts.MaxConnections = budget.KubeAPI

	// The SQL store (identity and Work planes) opens, migrated, before the control plane, whose
	// authenticator and authorizer read it, and closes after everything that uses it has stopped
	// (deferred first, so run last).
	controlplane.PrivateFiles()
	if err := opts.MakeDataDir(); err != nil {
		return err
	}
	db, err := store.Open(ctx, store.Options{DataDir: opts.DataDir, DatabaseURL: databaseURL})
	if err != nil {
		return err
	}
	defer db.Close()
	ids := identity.New(db)
	// The kube API knows the same callers and applies the same roles as the service API.
	tokens := &kubeauth.Authenticator{Identity: ids}
	oidcProvider, err := httpapi.OIDCProvider(cfg)
	if err != nil {
		return err
	}
	if oidcProvider != nil {
		tokens.JWT = oidcProvider.Verifier()
	}
	workspaces := &kubeauth.Authorizer{Identity: ids}
	// One counter of the rate limits for every surface: a token's requests count together
	// whether they reach the service API, /mcp, the hub or the kube API.
	rateLimits := &ratelimit.Counter{DB: db}
	limitDefaults, err := httpapi.LimitDefaults(cfg)
	if err != nil {
		return err
	}
	kubeLimits := &kubeauth.Limits{Counter: rateLimits, Defaults: limitDefaults, Authorizer: workspaces}
	opts.Limit, opts.Prelimit = kubeLimits.Authorized, kubeLimits.Unauthenticated
	opts.Authenticators = append(opts.Authenticators, tokens.Request())
	opts.Authorizers = append(opts.Authorizers, workspaces)
	opts.NamespaceVisibility = workspaces.Visibility
	// The rules of scopes (grants, references, what scope namespaces hold) and of Triggers (owner,
	// schedule, target) are admission's; the Trigger rules read the target Flows through the
	// loopback client once the kube API serves.
	triggerRules := triggers.NewAdmission()
	opts.Admission = append(opts.Admission, secrets.NewAdmission(ids), triggerRules)
	// The authorizer maps resource namespaces to their workspaces from a namespace informer
	// started once the kube API serves.
	opts.PostStart = map[string]func(context.Context, *rest.Config) error{
		"workspace-namespaces": workspaces.StartNamespaces,
		"trigger-rules": func(_ context.Context, loopback *rest.Config) error {
			reader, err := client.New(loopback, client.Options{Scheme: platformscheme.Scheme})
			if err == nil {
				triggerRules.SetReader(reader)
			}
			return err
		},
	}

	// The Work and Workplace stores open before the kube API, which serves their rows as the
	// group work.platform.dev (watches follow the Workplace outbox through the Work store's hub).
	workStore := work.New(db)
	artifactsDir := artifactsDirectory(cfg, opts.DataDir, databaseURL != "", ctrl.Log.WithName("workplace"))
	places := workplace.NewStore(db, workStore, workplace.FileArtifacts{Dir: artifactsDir})
	workStore.Observer = places
	var wakeExecutor atomic.Pointer[func()]
	workAPICtx, stopWorkAPI := context.WithCancel(context.Background())
	defer stopWorkAPI()
	workAPI, err := workapi.New(workAPICtx, workapi.Options{DB: db, Identity: ids, Changes: workStore.Changes(), Workplace: places,
		Runs: workStore, Log: ctrl.Log.WithName("workapi"),
		Readable: func(ctx context.Context, u user.Info) ([]identity.Workspace, bool, error) {
			return workspaces.WorkspacesWith(ctx, u, identity.PermRunsRead)
		},
		Wake: func() {
			if wake := wakeExecutor.Load(); wake != nil {
				(*wake)()
			}
		}})
	if err != nil {
		return err
	}
	opts.APIGroups = append(opts.APIGroups, workAPI.Install)

	server, err := controlplane.Start(ctx, opts)
	if err != nil {
		return err
	}
	// The kube API stops last: every part below stops before it (deferred after it, so run
	// first), so that none is cut off from it or holds a watch open while it shuts down.
	defer func() {
		if err := server.Stop(); err != nil && serveErr == nil {
			serveErr = err
		}
	}()
	// Watches of the Work plane end before the kube API stops (deferred after it, so run first).
	defer stopWorkAPI()
	if len(opts.EtcdServers) == 0 {
		// The data directory's etcd is this process's alone now (it refuses a second one), so the
		// process that served it before is dead: its runs resume at once, not when their leases
		// expire. Before anything serves, so that no lease of this process is taken for its
		// predecessor's.
		if execOpts.Owner, err = dataDirExecutorOwner(opts.DataDir); err != nil {
			return err
		}
		released, err := workStore.ReleaseLeasesOf(ctx, execOpts.Owner)
		if err != nil {
			return fmt.Errorf("release the runs of the previous process on this data directory: %w", err)
		}
		if released > 0 {
			ctrl.Log.WithName("executor").Info("took over the runs the previous process on this data directory left", "runs", released)
		}
	}
	kubeconfig, err := server.RecordAddress(opts.DataDir)
	if err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	// The platform's own reads and writes use the loopback identity; the service API writes on its
	// callers' behalf as another, privileged user, so the kube API's admission rules apply to it.
	kube, err := client.New(server.LoopbackConfig, client.Options{Scheme: platformscheme.Scheme})
	if err != nil {
		return err
	}
	serviceKube, err := client.New(server.ServiceAPIConfig, client.Options{Scheme: platformscheme.Scheme})
	if err != nil {
		return err
	}
	// What these two clients write is read from the kube API until the informers below have
	// shown it: a caller who changes a Flow or an Agent and submits at once runs what it wrote.
	writes := executor.NewWrites(platformscheme.Scheme)
	kube, serviceKube = writes.Track(kube), writes.Track(serviceKube)
	// Submissions resolve their Flows and versions, runs their agents, and agent calls their model
	// profiles and providers, from informers instead of a kube API request each (the API answers
	// what the cache does not have yet, and what this process wrote and the cache does not show
	// yet). The informers stop with the executor, before the kube API.
	informers, err := cache.New(server.LoopbackConfig, cache.Options{Scheme: platformscheme.Scheme})
	if err != nil {
		return err
	}
	informersCtx, stopInformers := context.WithCancel(context.Background())
	informersStopped := make(chan struct{})
	go func() {
		defer close(informersStopped)
		if err := informers.Start(informersCtx); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "informers: %v\n", err)
		}
	}()
	defer func() {
		stopInformers()
		<-informersStopped
	}()
	resolve := executor.CacheFirst{Cache: informers, Live: kube, Writes: writes}
	// The Workplace (conversations, Tasks, notifications) is a projection of the runs, written in
	// their transactions (workStore.Observer); artifact bytes are files of the data directory.
	execOpts.Work, execOpts.Resolver, execOpts.Log = workStore, executor.KubeResolver{Client: resolve}, ctrl.Log.WithName("executor")
	execOpts.Artifacts = places.Blobs
	// Budgets are read live (through the informers) before each model call: the workspace's
	// namespace annotations over Platform:Budgets:*, its Entry's and its Agent's.
	execOpts.Budgets = executor.KubeBudgets{Client: resolve, Settings: cfg, EntryOf: places.EntryOfInteraction}
	// One Resolver of Secret references and one Local Vault for the service API and the model
	// providers; the controllers get their own Resolver over their cache (controllers.SetupAll).
	// A missing or malformed master key leaves the Vaults Unavailable, with the reason in their
	// status: the platform runs on.
	localVault := &secrets.LocalVault{Store: db, MasterKey: masterKey}
	secretValues := &secrets.Service{Resolver: &secrets.Resolver{Reader: kube,
		Tree: secrets.IdentityTree{Identity: ids, Namespaces: secrets.KubeNamespaces(kube)}}, Vault: localVault}
	switch err := masterKey.Check(); {
	case errors.Is(err, secrets.ErrMasterKeyMissing):
		ctrl.Log.WithName("secrets").Info("the Local Vault has no master key yet: a Platform administrator initializes it (POST /api/local-vault/initialize), or set " + secrets.MasterKeyVariable)
	case err != nil:
		ctrl.Log.WithName("secrets").Info("the Local Vault is unavailable until its master key is fixed", "reason", err.Error())
	}
	if err := secrets.EnsureScopeNamespace(ctx, kube, secrets.Place{Scope: ownerscope.Of(ownerscope.Instance, ""), Namespace: ownerscope.InstanceNamespace}); err != nil {
		return fmt.Errorf("the instance's namespace: %w", err)
	}
	if err := sourceregistries.EnsureOfficial(ctx, kube, cfg); err != nil {
		return err
	}
	// One pool of guarded registry connections serves every registration's requests.
	registryTransport, err := registry.TransportFromConfig(cfg)
	if err != nil {
		return err
	}
	registryPool, err := registry.NewPool(registryTransport)
	if err != nil {
		return err
	}
	defer registryPool.Close()
	// A staticBearer credential is an instance-scoped Secret, opened for each request to the
	// registration's origin. The manual route and the periodic worker share one Refresher.
	registryClients := &sourceregistries.Clients{Pool: registryPool, Credentials: sourceregistries.SecretCredentials(secretValues.Value)}
	registryRefresher := &sourceregistries.Refresher{Store: &sourceregistries.Store{DB: db}, ErrorCode: sourceregistries.ErrorCode}
	ctrlOpts.Identity, ctrlOpts.LocalVault = ids, localVault
	if managed, ok := agents.(*provider.ManagedProvider); ok {
		managed.Client = resolve
		managed.Credentials = secretValues
	}
	if execOpts.Authorize, err = httpapi.RunAuthorizer(cfg, ids); err != nil {
		return err
	}
	// Tool provider sessions (STDIO processes among them) end after the executor and the service
	// API, which call them, have stopped (deferred before them, so run after).
	toolOpts.Kube, toolOpts.Secrets, toolOpts.Log = kube, tools.VaultSecrets(secretValues), ctrl.Log.WithName("tools")
	if toolOpts.RedeemURL == "" {
		toolOpts.RedeemURL = redeemURL(httpListener.Addr())
	}
	toolManager, err := tools.NewManager(toolOpts)
	if err != nil {
		return err
	}
	defer toolManager.Close()
	execOpts.Tools = toolManager
	// Triggers fire through the Work store, as their owners, whose authorization is evaluated
	// again at every firing; the controllers schedule them, the service API runs them now.
	triggerAccess, err := httpapi.TriggerAccess(cfg, ids, kube)
	if err != nil {
		return err
	}
	occurrences := &triggers.Service{DB: db, Work: execOpts.Work, Kube: kube, Access: triggerAccess,
		Recorded: places.TriggerOccurrenceRecorded}
	ctrlOpts.Triggers = occurrences
	// Pack archives live once by digest in the SQL store; the InstalledPack controller reads
	// them there and closes the Interactions of the Entries it removes.
	packStore := &packs.Store{DB: db}
	ctrlOpts.PackArchives, ctrlOpts.Interactions = packStore, places
	flowExecutor, err := executor.New(execOpts)
	if err != nil {
		return err
	}
	wake := flowExecutor.Wake
	wakeExecutor.Store(&wake)
	// /readyz answers 503 until the service API has said it is ready, so that what waits for it
	// (the Workplace host of `make run`) announces itself after it.
	announced := &atomic.Bool{}
	// It also fails, with the reason, while the SQL store or etcd (behind the kube API) does not
	// answer, and recovers by itself when they do: a load balancer sends no requests here then.
	ready := func(ctx context.Context) error {
		if !announced.Load() {
			return errors.New("starting")
		}
		if err := db.Ping(ctx); err != nil {
			return errors.New("the SQL store does not answer")
		}
		if err := server.Ready(ctx); err != nil {
			return errors.New("the kube API or its etcd does not answer")
		}
		return nil
	}
	api, err := service.New(httpapi.Options{
		Config: cfg, Kube: serviceKube, PlatformKube: kube, Reads: resolve, Ready: ready,
		Identity:           ids,
		ProvisionWorkspace: httpapi.NamespaceProvisioner(serviceKube),
		SeedFirstWorkspace: func(ctx context.Context, ws identity.Workspace) error { return demo.Seed(ctx, kube, ws.RouteName) },
		Work:               execOpts.Work,
		Workplace:          places,
		Log:                ctrl.Log.WithName("httpapi"),
		Executor:           flowExecutor,
		Tools:              toolManager,
		Secrets:            secretValues,
		Triggers:           occurrences,
		PackProjects:       packprojects.NewStore(db),
		RateLimits:         rateLimits,
		Packs:              packStore,
		Registries:         registryRefresher.Store,
		RegistryFetchers:   registryClients.Fetcher,
		RegistryRefresher:  registryRefresher,
	})
	if err != nil {
		return err
	}
	// The executor's workers take runnable runs (new ones, and those a killed process left
	// behind once their lease expires) and stop before the store closes (deferred after it).
	execCtx, stopExecutor := context.WithCancel(context.Background())
	execStopped := make(chan struct{})
	go func() {
		defer close(execStopped)
		flowExecutor.Run(execCtx)
	}()
	// On PostgreSQL the changes other replicas commit wake this process's waiters and workers.
	listenStopped := make(chan struct{})
	go func() {
		defer close(listenStopped)
		execOpts.Work.Changes().Listen(execCtx, db, ctrl.Log.WithName("notify"))
	}()
	defer func() {
		stopExecutor()
		<-execStopped
		<-listenStopped
	}()
	// The periodic registry refresh (only registrations with refreshPolicy.periodicEnabled) stops
	// before the registry pool and the store close (deferred after them, so run first).
	workerInterval, err := sourceregistries.WorkerIntervalFromConfig(cfg)
	if err != nil {
		return err
	}
	registryWorker := &sourceregistries.Worker{Kube: kube, Config: cfg, Refresher: registryRefresher, Fetchers: registryClients.Fetcher,
		Interval: workerInterval, Log: ctrl.Log.WithName("sourceregistries")}
	registryCtx, stopRegistryWorker := context.WithCancel(context.Background())
	registryStopped := make(chan struct{})
	go func() {
		defer close(registryStopped)
		registryWorker.Run(registryCtx)
	}()
	defer func() {
		stopRegistryWorker()
		<-registryStopped
	}()

	// The controllers run on the loopback identity once the kube API is ready, share the work
	// with other replicas through a Lease in kube-system, and stop before the kube API does
	// (deferred after server.Stop, so run before it) so that they never talk to a stopped server.
	// A lost Lease only makes them step down and campaign again: Run returns when mgrCtx ends.
	mgrCtx, cancelMgr := context.WithCancel(context.Background())
	mgrStopped := make(chan struct{})
	go func() {
		defer close(mgrStopped)
		if err := controllers.Run(mgrCtx, server.LoopbackConfig, ctrlOpts); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "controllers: %v\n", err)
		}
	}()
	stopControllers := func() {
		cancelMgr()
		<-mgrStopped
	}
	defer stopControllers()

	// The kube API's lines come first: it serves since controlplane.Start returned, and the
	// service API, which answers only from here on, relies on it.
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "kube API ready at https://%s\n", server.Address)
	fmt.Fprintf(out, "kubeconfig: export KUBECONFIG=%s   (or: platform kubeconfig --data-dir %s > kubeconfig)\n", kubeconfig, opts.DataDir)

	apiDone := make(chan error, 1)
	go func() { apiDone <- api.Serve(ctx, httpListener) }()
	// The service API's and the Console's lines come once the service API answers, in one write
	// so that no other process's line falls between them.
	announceCtx, stopAnnouncing := context.WithCancel(ctx)
	announcing := make(chan struct{})
	go func() {
		defer close(announcing)
		addr := httpListener.Addr()
		if readiness.Wait(announceCtx, readiness.Default, func(err error) { fmt.Fprintf(cmd.ErrOrStderr(), "service API: %v\n", err) },
			"http://"+addr.String()+"/livez") != nil {
			return
		}
		announced.Store(true)
		contract := "OpenAPI: `platform openapi`"
		if cfg.IsDevelopmentOrTesting() {
			contract = fmt.Sprintf("OpenAPI: http://%s%s.json", addr, httpapi.OpenAPIPath)
		}
		fmt.Fprintf(out, "service API ready at http://%s (%s)\n"+
			"Console ready at http://%s/ (Tasks: /tasks, Triggers: /triggers, cleanup: /cleanup, settings: /settings/profile)\n",
			addr, contract, addr)
		// Extensions are discovered once the service API answers, where they redeem their
		// capabilities; only when Platform:Extensions:DiscoverOnStartup is true.
		toolManager.DiscoverExtensions(announceCtx)
	}()
	defer func() {
		stopAnnouncing()
		<-announcing
	}()

	select {
	case <-ctx.Done():
		logging.Stopping()
		fmt.Fprintln(out, "shutting down")
		if err := <-apiDone; err != nil {
			return err
		}
	case err := <-apiDone:
		// The signal also ends Serve, and select may take its answer before ctx's.
		if ctx.Err() == nil {
			if err == nil {
				err = errors.New("it returned without a signal")
			}
			return fmt.Errorf("service API stopped: %w", err)
		}
		logging.Stopping()
		fmt.Fprintln(out, "shutting down")
		if err != nil {
			return err
		}
	case <-server.Done():
	}
	return nil
}

// redeemURL is the capability redemption endpoint at the service API's address; an unspecified
// listening address is reached at loopback.
func redeemURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + aep.RedeemPath
}

// NewKubeconfigCommand prints the administrator's kubeconfig.
func NewKubeconfigCommand() *cobra.Command {
	var dataDir, server string
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print a kubeconfig for the embedded kube API (CA, server, administrator credential)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := controlplane.Kubeconfig(dataDir, server)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", ".data", "data directory of `platform serve`")
	cmd.Flags().StringVar(&server, "server", "", "server URL to put in the kubeconfig (default: the address `platform serve` listens on)")
	return cmd
}

// artifactsDirectory is where artifact bytes are kept: the configured directory, or the data
// directory's own. Replicas share a PostgreSQL store, and a download another replica serves would
// miss bytes kept in this one's data directory with nothing else saying why: so a replica on
// PostgreSQL without a configured directory says it once at start.
func artifactsDirectory(cfg *config.Config, dataDir string, postgres bool, log logr.Logger) string {
	if dir := cfg.Get(workplace.ArtifactsDirectorySetting); dir != "" {
		return dir
	}
	dir := filepath.Join(dataDir, "artifacts")
	if postgres {
		log.Info("artifact bytes are kept in this replica's data directory: replicas that share the PostgreSQL store must share one directory too ("+workplace.ArtifactsDirectorySetting+")", "directory", dir)
	}
	return dir
}
