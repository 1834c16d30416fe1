package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/controllers/agent"
	"platform.dev/platform/controllers/dashboard"
	"platform.dev/platform/controllers/entry"
	"platform.dev/platform/controllers/flow"
	"platform.dev/platform/controllers/installedpack"
	"platform.dev/platform/controllers/model"
	"platform.dev/platform/controllers/modelprofile"
	"platform.dev/platform/controllers/modelprovider"
	"platform.dev/platform/controllers/runtimeprofile"
	"platform.dev/platform/controllers/secret"
	"platform.dev/platform/controllers/sourceregistry"
	"platform.dev/platform/controllers/tool"
	"platform.dev/platform/controllers/trigger"
	"platform.dev/platform/controllers/workspace"
)

// LeaderElectionID names the Lease that the replicas of the controller manager share: only its
// holder reconciles.
const LeaderElectionID = "platform-controller-manager"

// Options of the controller manager.
type Options struct {
	// MetricsAddr is where Prometheus metrics are served; "0" (or empty) serves none.
	MetricsAddr string
	// LeaderElection makes the replicas share the work through a Lease; the platform turns it
	// off only in tests that run a single manager.
	LeaderElection bool
	// LeaderElectionNamespace holds the Lease; kube-system when empty.
	LeaderElectionNamespace string
	// ElectionIdentity names this replica in the Lease; when empty, the host name and a fresh
	// UUID. A process that can have no rival (the one that owns its embedded etcd) names itself
	// the same on every start, so that its next start after a crash holds the Lease at once
	// instead of waiting for the dead process's Lease to expire.
	ElectionIdentity string
	// Identity places workspaces and tenants for the rules of Secrets and Vaults; nil places
	// every namespace as a workspace of its own, below the instance.
	Identity *identity.Service
	// LocalVault is the Local Vault of `platform serve`; nil when the manager runs without its SQL
	// store, where Vaults report that they cannot be seen.
	LocalVault *secrets.LocalVault
	// Triggers fires the occurrences of Triggers in the Work store (apiserver/triggers.Service);
	// nil when the manager runs without the store, where Triggers report their next instant and
	// nothing fires.
	Triggers trigger.Occurrences
	// PackArchives reads the stored Pack archives by digest (apiserver/packs.Store); nil when the
	// manager runs without the store, where an install reports that its archive cannot be read.
	PackArchives installedpack.Archives
	// Interactions closes the eligible Interactions of an Entry a Pack removes
	// (apiserver/workplace.Store); nil leaves them open.
	Interactions installedpack.Interactions
	// AllowedCommands are the commands the instance runs for STDIO ToolProviders
	// (Platform:Tools:AllowedCommands); a provider with another command is not Ready. nil when
	// the manager does not know the instance's settings: commands are not checked then.
	AllowedCommands []string
	// LeaseDuration, RenewDeadline and RetryPeriod tune the leader election of Run (the
	// Default... values when zero): how long a Lease holds without renewal, how long a holder
	// keeps trying to renew before it steps down, and how often it tries.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// Log receives what Run reports of leader election terms; ctrl.Log when unset.
	Log logr.Logger

	// skipNameValidation lets Run build one manager per term in one process: controller names
	// are otherwise registered once per process.
	skipNameValidation bool
}

// NewManager builds a controller-runtime manager on cfg with every reconciler of the platform
// registered. The caller starts it, and stops it (by cancelling Start's context) before the API
// it talks to. The commands use Run instead, which survives a lost Lease.
func NewManager(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if o.MetricsAddr == "" {
		o.MetricsAddr = "0"
	}
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = metav1.NamespaceSystem
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "platform-controller-manager"
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  platformscheme.Scheme,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// A replica that stops cleanly hands the Lease over at once instead of after it expires.
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        "0",
		Controller:                    ctrlconfig.Controller{SkipNameValidation: &o.skipNameValidation},
	})
	if err != nil {
		return nil, fmt.Errorf("controller manager: %w", err)
	}
	if err := SetupAll(mgr, o); err != nil {
		return nil, err
	}
	return mgr, nil
}

// commandAllowed checks a STDIO command against AllowedCommands; nil when they are not known.
func (o Options) commandAllowed() func(string) bool {
	if o.AllowedCommands == nil {
		return nil
	}
	return func(command string) bool { return slices.Contains(o.AllowedCommands, command) }
}

// SetupAll registers every reconciler of the platform with mgr, each with the manager's client
// and an event recorder named after it (the reporting controller of its events).
func SetupAll(mgr ctrl.Manager, o Options) error {
	c := mgr.GetClient()
	// One Resolver of Secret references for every reconciler, reading through the manager's cache.
	resolver := &secrets.Resolver{Reader: c, Tree: secrets.IdentityTree{Identity: o.Identity, Namespaces: secrets.KubeNamespaces(c)}}
	vaults := &secrets.Service{Resolver: resolver, Vault: o.LocalVault}
	recorder := func(name string) events.EventRecorder { return mgr.GetEventRecorder(name + "-controller") }
	reconcilers := []struct {
		name       string
		reconciler interface{ SetupWithManager(ctrl.Manager) error }
	}{
		{"agent", &agent.Reconciler{Client: c, Recorder: recorder("agent")}},
		{"modelprofile", &modelprofile.Reconciler{Client: c, Recorder: recorder("modelprofile")}},
		{"modelprovider", &modelprovider.Reconciler{Client: c, Recorder: recorder("modelprovider"), Secrets: resolver}},
		{"flow", &flow.Reconciler{Client: c, Recorder: recorder("flow"), Reader: mgr.GetAPIReader()}},
		{"runtimeprofile", &runtimeprofile.Reconciler{Client: c, Recorder: recorder("runtimeprofile")}},
		{"workspace", &workspace.Reconciler{Client: c, Recorder: recorder("workspace")}},
		{"model", &model.Reconciler{Client: c, Recorder: recorder("model")}},
		{"tool", &tool.Reconciler{Client: c, Recorder: recorder("tool")}},
		{"toolprovider", &tool.ProviderReconciler{Client: c, Recorder: recorder("toolprovider"), Secrets: resolver, CommandAllowed: o.commandAllowed()}},
		{"secret", &secret.Reconciler{Client: c, Recorder: recorder("secret"), Secrets: vaults}},
		{"vault", &secret.VaultReconciler{Client: c, Recorder: recorder("vault"), Secrets: vaults}},
		{"flowversion", &flow.VersionReconciler{Client: c, Recorder: recorder("flowversion"), Reader: mgr.GetAPIReader()}},
		{"entry", &entry.Reconciler{Client: c, Recorder: recorder("entry"), Reader: mgr.GetAPIReader()}},
		{"publishedentry", &entry.PublishedReconciler{Client: c, Recorder: recorder("publishedentry"), Reader: mgr.GetAPIReader()}},
		{"trigger", &trigger.Reconciler{Client: c, Recorder: recorder("trigger"), Occurrences: o.Triggers}},
		{"dashboard", &dashboard.Reconciler{Client: c, Recorder: recorder("dashboard")}},
		{"sourceregistry", &sourceregistry.Reconciler{Client: c, Recorder: recorder("sourceregistry")}},
		{"installedpack", &installedpack.Reconciler{Client: c, Recorder: recorder("installedpack"), Archives: packArchives(o.PackArchives), Interactions: o.Interactions}},
	}
	var errs []error
	for _, r := range reconcilers {
		if err := r.reconciler.SetupWithManager(mgr); err != nil {
			errs = append(errs, fmt.Errorf("%s controller: %w", r.name, err))
		}
	}
	// The archives no installation refers to any more are removed from the SQL store.
	if store, ok := o.PackArchives.(installedpack.CollectableArchives); ok {
		collector := &installedpack.ArchiveCollector{Reader: mgr.GetAPIReader(), Store: store, Log: mgr.GetLogger().WithName("packarchives")}
		if err := mgr.Add(collector); err != nil {
			errs = append(errs, fmt.Errorf("pack archive collector: %w", err))
		}
	}
	return errors.Join(errs...)
}

// noArchives is the archive store of a manager without the SQL store.
type noArchives struct{}

func (noArchives) Archive(context.Context, platformv1.Digest) ([]byte, error) {
	return nil, errors.New("the controllers run without the SQL store that holds Pack archives")
}

func packArchives(a installedpack.Archives) installedpack.Archives {
	if a == nil {
		return noArchives{}
	}
	return a
}
