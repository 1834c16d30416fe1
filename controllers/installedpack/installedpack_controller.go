package installedpack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
	"platform.dev/platform/internal/pack"
	"platform.dev/platform/internal/resourcenamespace"
)

// +kubebuilder:rbac:groups=platform.dev,resources=installedpacks,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=platform.dev,resources=installedpacks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=modelproviders;runtimeprofiles;modelprofiles;agents;flows;entries,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=platform.dev,resources=dashboards,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create

// ExitAfterStepEnv is a FAULT INJECTION FOR TESTS ONLY, off by default: when set to k, the
// process exits (status 3) right after it journaled step k of an install or update operation,
// which is how the crash tests kill the binary "after step k". Never set it in production.
const ExitAfterStepEnv = "PLATFORM_TEST_FAULT_PACK_EXIT_AFTER_STEP"

// ExitPackEnv is a FAULT INJECTION FOR TESTS ONLY, with ExitAfterStepEnv: when set to a Pack's
// `publisher.name`, only that Pack's operations exit after step k, so that one server start
// can finish the operation an earlier start left and cut another Pack's short.
const ExitPackEnv = "PLATFORM_TEST_FAULT_PACK_EXIT_PACK"

// dependencyGrace is how long a removal refused by dependency protection is retried.
const dependencyGrace = time.Minute

// Archives reads stored Pack archives by digest (apiserver/packs.Store).
type Archives interface {
	Archive(ctx context.Context, digest platformv1.Digest) ([]byte, error)
}

// Interactions closes the eligible Interactions of a removed Entry (apiserver/workplace.Store).
type Interactions interface {
	CloseInteractions(ctx context.Context, workspaceID, entryNamespace, entryName string) (int64, error)
}

// Reconciler carries out the operations of InstalledPacks.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Archives is required: an InstalledPack names its archive by digest.
	Archives Archives
	// Interactions is optional: without it a removed Entry's conversations stay open.
	Interactions Interactions
	// Reader reads uncached what an uninstall must see as it is now (what is left in the
	// namespace it removes); the manager's API reader when nil.
	Reader client.Reader
	// ExitAfterStep is the fault injection of ExitAfterStepEnv (0: off).
	ExitAfterStep int
	// ExitPack limits ExitAfterStep to the operations of one Pack (ExitPackEnv; empty: all).
	ExitPack string
	// Exit ends the process for the fault injection; os.Exit when nil.
	Exit func(code int)

	mu    sync.Mutex
	cache map[platformv1.Digest]*pack.Archive
}

// SetupWithManager registers the reconciler and its watches with mgr: a change of any kind a
// Pack may contain reconciles the installation that owns it (its label), or the installations of
// its workspace (a binding target may have appeared).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil || r.Archives == nil {
		return errors.New("installedpack reconciler: Client, Recorder and Archives are required")
	}
	if r.Reader == nil {
		r.Reader = mgr.GetAPIReader()
	}
	if v := os.Getenv(ExitAfterStepEnv); v != "" && r.ExitAfterStep == 0 {
		r.ExitAfterStep, _ = strconv.Atoi(v)
		r.ExitPack = os.Getenv(ExitPackEnv)
	}
	b := ctrl.NewControllerManagedBy(mgr).For(&platformv1.InstalledPack{})
	toPacks := handler.EnqueueRequestsFromMapFunc(r.packsOf)
	for _, kind := range pack.InstallOrder {
		b = b.Watches(newObject(kind), toPacks)
	}
	b = b.Watches(&platformv1.Secret{}, toPacks)
	return b.Complete(r)
}

// newObject is an empty object of a kind a Pack may contain; nil for another kind.
func newObject(kind platformv1.PackResourceKind) client.Object {
	switch kind {
	case "ModelProvider":
		return &platformv1.ModelProvider{}
	case "RuntimeProfile":
		return &platformv1.RuntimeProfile{}
	case "ModelProfile":
		return &platformv1.ModelProfile{}
	case "Agent":
		return &platformv1.Agent{}
	case "Flow":
		return &platformv1.Flow{}
	case "Entry":
		return &platformv1.Entry{}
	}
	return nil
}

func gvk(kind platformv1.PackResourceKind) schema.GroupVersionKind {
	return platformv1.GroupVersion.WithKind(string(kind))
}

func newLive(kind platformv1.PackResourceKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk(kind))
	return u
}

func key(kind platformv1.PackResourceKind, name string) string { return string(kind) + "/" + name }

// Reconcile does one thing per call: starts an operation, carries out one step of it, or
// observes the installed resources; the status it writes is the journal the next call goes on
// from.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ip := &platformv1.InstalledPack{}
	if err := r.Client.Get(ctx, req.NamespacedName, ip); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ip.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := ip.DeepCopy()
	if ip.Definition.ArchiveDigest == "" && !ip.Definition.Uninstall {
		// A record without a desired state (written by hand, as the samples do): nothing to
		// carry out, and nothing of it is missing.
		setReadyCondition(ip, nil)
		reconcileutil.Observed(&ip.Status.ResourceStatus, ip.Generation)
		return reconcileutil.IgnoreConflict(reconcileutil.PatchStatus(ctx, r.Client, base, ip))
	}
	// The namespace is looked up first: Ensure writes, and most reconciles find it. An uninstall
	// never creates it: it may be the one that removed it, before a restart.
	kns, err := resourcenamespace.Resolve(ctx, r.Client, ip.Namespace, platformv1.ResourceNamespace(ip.Name))
	switch {
	case errors.Is(err, resourcenamespace.ErrNotFound) && ip.Definition.Uninstall:
		kns, err = resourcenamespace.KubeName(ip.Namespace, platformv1.ResourceNamespace(ip.Name)), nil
	case errors.Is(err, resourcenamespace.ErrNotFound):
		kns, err = resourcenamespace.Ensure(ctx, r.Client, ip.Namespace, platformv1.ResourceNamespace(ip.Name))
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	ip.Status.Namespace = platformv1.ResourceNamespace(ip.Name)
	o := &operation{r: r, ip: ip, kns: kns}
	op := ip.Status.Operation
	var res ctrl.Result
	stepped := -1
	switch {
	case op != nil && (op.Phase == platformv1.PackApplying || op.Phase == platformv1.PackCompensating):
		stepped, res, err = o.step(ctx)
	case op == nil || op.Generation != ip.Generation:
		res, err = o.start(ctx)
	default:
		err = o.observe(ctx)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if o.deleted {
		return ctrl.Result{}, nil
	}
	setReadyCondition(ip, o.missing)
	reconcileutil.Observed(&ip.Status.ResourceStatus, ip.Generation)
	if err := reconcileutil.PatchStatus(ctx, r.Client, base, ip); err != nil {
		return reconcileutil.IgnoreConflict(err)
	}
	if stepped >= 0 && r.ExitAfterStep > 0 && stepped+1 == r.ExitAfterStep && ip.Status.Operation.Phase == platformv1.PackApplying &&
		ip.Status.Operation.Kind != platformv1.PackOperationUninstall && (r.ExitPack == "" || r.ExitPack == ip.Name) {
		log.FromContext(ctx).Info("fault injection: exiting after a journaled step", "env", ExitAfterStepEnv, "step", stepped+1)
		exit := r.Exit
		if exit == nil {
			exit = os.Exit
		}
		exit(3)
	}
	return res, nil
}

// maxCachedArchives bounds the read archives the reconciler keeps.
const maxCachedArchives = 16

// read is the archive stored under digest, read and validated once: an archive never changes
// under its digest, and each step of an operation needs it again (reading 100 resources at
// every step made an install quadratic).
func (r *Reconciler) read(ctx context.Context, digest platformv1.Digest) (*pack.Archive, error) {
	r.mu.Lock()
	a, ok := r.cache[digest]
	r.mu.Unlock()
	if ok {
		return a, nil
	}
	data, err := r.Archives.Archive(ctx, digest)
	if err != nil {
		return nil, err
	}
	if a, err = pack.Read(data, ""); err != nil {
		return nil, fmt.Errorf("stored archive %s: %w", digest, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cache == nil || len(r.cache) >= maxCachedArchives {
		r.cache = map[platformv1.Digest]*pack.Archive{}
	}
	r.cache[digest] = a
	return a, nil
}

// operation is one reconcile of one InstalledPack.
type operation struct {
	r   *Reconciler
	ip  *platformv1.InstalledPack
	kns string
	// deleted: the uninstall finished and removed the record.
	deleted bool
	// missing lists the managed resources that do not exist, as "status.resources[i]: ..." lines.
	missing []string
	// archives read during this reconcile, by digest.
	archives map[platformv1.Digest]*pack.Archive
}

func (o *operation) archive(ctx context.Context, digest platformv1.Digest) (*pack.Archive, error) {
	if a, ok := o.archives[digest]; ok {
		return a, nil
	}
	a, err := o.r.read(ctx, digest)
	if err != nil {
		return nil, err
	}
	if o.archives == nil {
		o.archives = map[platformv1.Digest]*pack.Archive{}
	}
	o.archives[digest] = a
	return a, nil
}

func (o *operation) bindings() map[string]pack.BindingSelection {
	out := map[string]pack.BindingSelection{}
	for _, b := range o.ip.Definition.Bindings {
		ns := string(b.Namespace)
		if ns == "" {
			ns = string(platformv1.DefaultResourceNamespace)
		}
		out[b.Binding] = pack.BindingSelection{Namespace: ns, Name: string(b.Name)}
	}
	return out
}

// satisfied says, per declared binding of a, whether its selection names an existing target.
func (o *operation) satisfied(ctx context.Context, a *pack.Archive) (map[string]bool, error) {
	return Satisfied(ctx, o.r.Client, o.ip.Namespace, a, o.bindings())
}

// Satisfied says, per declared binding of a, whether its selection names an existing
// ModelProfile or Secret of workspace (its kube namespace). The service API's preview uses it too.
func Satisfied(ctx context.Context, c client.Reader, workspace string, a *pack.Archive, sel map[string]pack.BindingSelection) (map[string]bool, error) {
	out := map[string]bool{}
	for _, b := range a.Manifest.Definition.Bindings {
		s, ok := sel[b.Name]
		if !ok || s.Name == "" {
			continue
		}
		ns, err := resourcenamespace.Resolve(ctx, c, workspace, platformv1.ResourceNamespace(s.Namespace))
		if errors.Is(err, resourcenamespace.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var target client.Object = &platformv1.ModelProfile{}
		if b.TargetKind == pack.SecretBinding {
			target = &platformv1.Secret{}
		}
		err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.Name}, target)
		if client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		out[b.Name] = err == nil
	}
	return out, nil
}

// Live lists the objects of the kinds a Pack may contain in kube namespace kns, as Plan reads them.
func Live(ctx context.Context, c client.Reader, kns string) ([]pack.LiveObject, error) {
	var out []pack.LiveObject
	for _, kind := range pack.InstallOrder {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(platformv1.GroupVersion.WithKind(string(kind) + "List"))
		if err := c.List(ctx, list, client.InNamespace(kns)); err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, liveObject(kind, &list.Items[i]))
		}
	}
	return out, nil
}

func liveObject(kind platformv1.PackResourceKind, u *unstructured.Unstructured) pack.LiveObject {
	l := pack.LiveFrom(u)
	l.Kind = kind
	return l
}

// Exists answers Plan's question whether the workspace (its kube namespace) has a resource that a
// Pack refers to in another resource namespace, or a Secret. A failed read counts as absent.
func Exists(ctx context.Context, c client.Reader, workspace string) func(kind, namespace, name string) bool {
	return func(kind, namespace, name string) bool {
		ns, err := resourcenamespace.Resolve(ctx, c, workspace, platformv1.ResourceNamespace(namespace))
		if err != nil {
			return false
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(platformv1.GroupVersion.WithKind(kind))
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u) == nil
	}
}

// InstalledRecord is what an update of ip starts from: the installed archive and the installed
// fingerprints; nil when nothing is installed.
func InstalledRecord(ip *platformv1.InstalledPack, installed *pack.Archive) *pack.Installed {
	if installed == nil {
		return nil
	}
	rec := &pack.Installed{Archive: installed, Fingerprints: map[string]platformv1.Digest{}}
	for _, m := range ip.Status.Resources {
		rec.Fingerprints[key(m.Kind, string(m.Name))] = m.Fingerprint
	}
	return rec
}

// start plans the operation the definition asks for and journals its steps; nothing is applied
// yet.
func (o *operation) start(ctx context.Context) (ctrl.Result, error) {
	ip := o.ip
	if ip.Definition.Uninstall {
		return o.startUninstall(ctx)
	}
	now := metav1.Now()
	op := &platformv1.PackOperation{Kind: platformv1.PackOperationInstall, Generation: ip.Generation, StartedAt: &now,
		FromDigest: ip.Status.InstalledDigest, ToDigest: ip.Definition.ArchiveDigest, Phase: platformv1.PackApplying}
	if op.FromDigest != "" {
		op.Kind = platformv1.PackOperationUpdate
	}
	ip.Status.Operation = op
	fail := func(resource, msg string) (ctrl.Result, error) {
		op.Phase, op.FailedResource, op.Error = platformv1.PackOperationFailed, resource, msg
		if ip.Status.InstalledDigest == "" {
			ip.Status.State = platformv1.PackRolledBack
		}
		o.r.Recorder.Eventf(ip, nil, corev1.EventTypeWarning, platformv1.InstallFailedReason, string(op.Kind), "%s", msg)
		return ctrl.Result{}, nil
	}
	to, err := o.archive(ctx, op.ToDigest)
	if err != nil {
		return fail("", "the archive cannot be read: "+err.Error())
	}
	op.ToVersion = platformv1.SemanticVersion(to.Manifest.Metadata.Version)
	if to.Manifest.Namespace() != ip.Name {
		return fail("", fmt.Sprintf("the archive is Pack %s, not %s", to.Manifest.Namespace(), ip.Name))
	}
	var from *pack.Archive
	if op.FromDigest != "" {
		if from, err = o.archive(ctx, op.FromDigest); err != nil {
			return fail("", "the installed archive cannot be read: "+err.Error())
		}
	}
	cs, err := o.plan(ctx, to, from)
	if err != nil {
		return ctrl.Result{}, err
	}
	if cs.Blocked {
		var conflicts []string
		for _, c := range cs.Changes {
			if c.Action == pack.ActionConflict {
				conflicts = append(conflicts, fmt.Sprintf("%s %s %s", c.Kind, c.Name, c.Reason))
			}
		}
		return fail("", "blocked by conflicts: "+strings.Join(conflicts, "; "))
	}
	if msg := o.dashboardRefusal(ctx, cs); msg != "" {
		return fail("", msg)
	}
	msg, _, err := TriggerRefusal(ctx, o.r.Client, ip.Namespace, cs)
	if err != nil {
		return ctrl.Result{}, err
	}
	if msg != "" {
		return fail("", msg)
	}
	for _, c := range cs.Changes {
		switch c.Action {
		case pack.ActionCreate, pack.ActionUpdate, pack.ActionRemove:
			op.Steps = append(op.Steps, platformv1.PackOperationStep{Kind: c.Kind, Name: platformv1.ResourceName(c.Name), Action: string(c.Action)})
		}
	}
	ip.Status.State = platformv1.PackInstalling
	ip.Status.Preserved = nil
	return ctrl.Result{Requeue: true}, nil
}

func (o *operation) plan(ctx context.Context, to, from *pack.Archive) (pack.ChangeSet, error) {
	live, err := Live(ctx, o.r.Client, o.kns)
	if err != nil {
		return pack.ChangeSet{}, err
	}
	sat, err := o.satisfied(ctx, to)
	if err != nil {
		return pack.ChangeSet{}, err
	}
	return pack.Plan(pack.PlanInput{Archive: to, Bindings: o.bindings(), Satisfied: sat, Live: live,
		Installed: InstalledRecord(o.ip, from), Exists: Exists(ctx, o.r.Client, o.ip.Namespace)}), nil
}

// dashboardRefusal is why an operation that removes Entries on Dashboards may not go on: only
// removeDashboardReferences authorizes removing those references.
func (o *operation) dashboardRefusal(ctx context.Context, cs pack.ChangeSet) string {
	if o.ip.Definition.RemoveDashboardReferences {
		return ""
	}
	var on []string
	for _, c := range cs.Changes {
		if c.Action != pack.ActionRemove || c.Kind != "Entry" {
			continue
		}
		ds, _ := DashboardsReferencing(ctx, o.r.Client, o.ip.Namespace, platformv1.ResourceNamespace(o.ip.Name), c.Name)
		for _, d := range ds {
			on = append(on, fmt.Sprintf("Entry %s is on Dashboard %s", c.Name, d))
		}
	}
	if len(on) == 0 {
		return ""
	}
	return strings.Join(on, "; ") + ": removing it needs removeDashboardReferences"
}

// DashboardsReferencing names the Dashboards of workspace that show Entry name of resource
// namespace rns.
func DashboardsReferencing(ctx context.Context, c client.Reader, workspace string, rns platformv1.ResourceNamespace, name string) ([]string, error) {
	list := &platformv1.DashboardList{}
	if err := c.List(ctx, list, client.InNamespace(workspace)); err != nil {
		return nil, err
	}
	var out []string
	for _, d := range list.Items {
		for _, e := range d.Definition.Entries {
			if e.Namespace == rns && string(e.Name) == name {
				out = append(out, d.Name)
				break
			}
		}
	}
	return out, nil
}

// startUninstall journals the removal of every managed resource that is still owned and
// unchanged, in reverse install order; modified, detached and referenced ones are preserved.
func (o *operation) startUninstall(ctx context.Context) (ctrl.Result, error) {
	ip := o.ip
	now := metav1.Now()
	op := &platformv1.PackOperation{Kind: platformv1.PackOperationUninstall, Generation: ip.Generation, StartedAt: &now,
		FromDigest: ip.Status.InstalledDigest, Phase: platformv1.PackApplying}
	plan, err := PlanUninstall(ctx, o.r.Client, ip, o.kns)
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, m := range plan.Remove {
		op.Steps = append(op.Steps, platformv1.PackOperationStep{Kind: m.Kind, Name: m.Name, Action: string(pack.ActionRemove)})
	}
	ip.Status.Preserved = plan.Preserve
	ip.Status.Operation = op
	ip.Status.State = platformv1.PackUninstalling
	return ctrl.Result{Requeue: true}, nil
}

// UninstallPlan is what uninstalling removes and preserves.
type UninstallPlan struct {
	Remove   []platformv1.PreservedResource
	Preserve []platformv1.PreservedResource
}

// PlanUninstall decides, per managed resource of ip in reverse install order, whether uninstall
// removes it (still owned, unchanged since installed, not on a Dashboard unless authorized) or
// preserves it, and why. A missing resource is neither.
func PlanUninstall(ctx context.Context, c client.Reader, ip *platformv1.InstalledPack, kns string) (UninstallPlan, error) {
	var p UninstallPlan
	for i := len(ip.Status.Resources) - 1; i >= 0; i-- {
		m := ip.Status.Resources[i]
		u := newLive(m.Kind)
		err := c.Get(ctx, client.ObjectKey{Namespace: kns, Name: string(m.Name)}, u)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return p, err
		}
		r := platformv1.PreservedResource{Kind: m.Kind, Name: m.Name}
		switch {
		case u.GetLabels()[pack.PackLabel] != ip.Name:
			r.Reason = "detached: no longer labelled as owned by this Pack"
		case pack.Fingerprint(u.Object) != m.Fingerprint:
			r.Reason = "modified since installed"
		}
		if r.Reason == "" && m.Kind == "Flow" {
			ts, err := TriggersTargeting(ctx, c, ip.Namespace, platformv1.ResourceNamespace(ip.Name), string(m.Name))
			if err != nil {
				return p, err
			}
			if len(ts) > 0 {
				r.Reason = "referenced by Trigger " + strings.Join(ts, ", ")
			}
		}
		if r.Reason == "" && m.Kind == "Entry" && !ip.Definition.RemoveDashboardReferences {
			ds, err := DashboardsReferencing(ctx, c, ip.Namespace, platformv1.ResourceNamespace(ip.Name), string(m.Name))
			if err != nil {
				return p, err
			}
			if len(ds) > 0 {
				r.Reason = "referenced by Dashboard " + strings.Join(ds, ", ")
			}
		}
		if r.Reason != "" {
			p.Preserve = append(p.Preserve, r)
		} else {
			p.Remove = append(p.Remove, r)
		}
	}
	return p, nil
}

// step carries out (or compensates) the next step of the journal and records it. It returns
// the index of the step it carried out, -1 when none.
func (o *operation) step(ctx context.Context) (int, ctrl.Result, error) {
	op := o.ip.Status.Operation
	if op.Phase == platformv1.PackCompensating {
		res, err := o.compensate(ctx)
		return -1, res, err
	}
	i := 0
	for i < len(op.Steps) && op.Steps[i].Done {
		i++
	}
	if i == len(op.Steps) {
		return -1, ctrl.Result{}, o.finish(ctx)
	}
	s := &op.Steps[i]
	err := o.apply(ctx, s)
	if err != nil {
		var sf *stepFailure
		if !errors.As(err, &sf) {
			return -1, ctrl.Result{}, err
		}
		if op.Kind == platformv1.PackOperationUninstall {
			// An uninstall never compensates: the resource it could not remove is preserved.
			o.ip.Status.Preserved = append(o.ip.Status.Preserved, platformv1.PreservedResource{Kind: s.Kind, Name: s.Name, Reason: sf.msg})
			s.Done = true
			return i, ctrl.Result{Requeue: true}, nil
		}
		op.Phase, op.FailedResource, op.Error = platformv1.PackCompensating, key(s.Kind, string(s.Name)), sf.msg
		o.r.Recorder.Eventf(o.ip, nil, corev1.EventTypeWarning, platformv1.InstallFailedReason, string(op.Kind),
			"%s %s failed, compensating: %s", s.Kind, s.Name, sf.msg)
		return -1, ctrl.Result{Requeue: true}, nil
	}
	s.Done = true
	return i, ctrl.Result{Requeue: true}, nil
}

// stepFailure is a step that cannot be carried out (as opposed to a transient error, which is
// retried): the operation compensates.
type stepFailure struct{ msg string }

func (e *stepFailure) Error() string { return e.msg }

func failure(format string, args ...any) error {
	return &stepFailure{msg: fmt.Sprintf(format, args...)}
}

// permanent turns a kube error into a step failure when retrying cannot help.
func permanent(err error) error {
	switch {
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err), apierrors.IsAlreadyExists(err):
		return failure("%s", err.Error())
	}
	return err
}

// desired renders resource kind/name of the archive of digest.
func (o *operation) desired(ctx context.Context, digest platformv1.Digest, kind platformv1.PackResourceKind, name string) (*unstructured.Unstructured, *pack.Archive, error) {
	a, err := o.archive(ctx, digest)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range a.Resources {
		if r.Kind == kind && r.Name == name {
			u, err := pack.Render(a, r, o.kns, o.bindings())
			if err != nil {
				return nil, nil, failure("rendering %s %s: %v", kind, name, err)
			}
			return u, a, nil
		}
	}
	return nil, a, failure("the archive %s has no %s %s", digest, kind, name)
}

// apply carries out one step; it is idempotent: a live object that already has the target
// content is done.
func (o *operation) apply(ctx context.Context, s *platformv1.PackOperationStep) error {
	op := o.ip.Status.Operation
	switch pack.Action(s.Action) {
	case pack.ActionCreate, pack.ActionUpdate:
		want, _, err := o.desired(ctx, op.ToDigest, s.Kind, string(s.Name))
		if err != nil {
			return err
		}
		var installed platformv1.Digest
		for _, m := range o.ip.Status.Resources {
			if m.Kind == s.Kind && string(m.Name) == string(s.Name) {
				installed = m.Fingerprint
			}
		}
		return o.put(ctx, want, installed)
	case pack.ActionRemove:
		return o.remove(ctx, s.Kind, string(s.Name))
	}
	return failure("unknown action %q", s.Action)
}

// put makes the live object carry want's content: creates it when absent, updates it when it
// is owned and still has the content `expected` (the installed fingerprint, or empty when the
// step made it), and refuses to touch anything else.
func (o *operation) put(ctx context.Context, want *unstructured.Unstructured, expected platformv1.Digest) error {
	kind := platformv1.PackResourceKind(want.GetKind())
	live := newLive(kind)
	err := o.r.Client.Get(ctx, client.ObjectKeyFromObject(want), live)
	if apierrors.IsNotFound(err) {
		err = o.r.Client.Create(ctx, want.DeepCopy())
		if !apierrors.IsAlreadyExists(err) {
			return permanent(err)
		}
		// Another replica's reconciler (a deposed leader not yet stopped) created it between
		// the read and the create: what it wrote is judged like any live object.
		err = o.r.Client.Get(ctx, client.ObjectKeyFromObject(want), live)
	}
	if err != nil {
		return err
	}
	if live.GetLabels()[pack.PackLabel] != o.ip.Name {
		return failure("%s %s exists and is not owned by this Pack", kind, want.GetName())
	}
	// The kube API defaults fields, so a live object never has the rendered content byte for
	// byte: the fingerprint annotation says which content it was written from, and the installed
	// fingerprint (taken from the live object after the write) says whether a person changed it.
	current := pack.Fingerprint(live.Object)
	if live.GetAnnotations()[pack.FingerprintAnnotation] == want.GetAnnotations()[pack.FingerprintAnnotation] &&
		live.GetAnnotations()[pack.VersionAnnotation] == want.GetAnnotations()[pack.VersionAnnotation] {
		return nil
	}
	if expected != "" && current != expected {
		return failure("%s %s changed since installed", kind, want.GetName())
	}
	live.Object["definition"] = want.Object["definition"]
	live.SetLabels(mergePlatform(live.GetLabels(), want.GetLabels()))
	live.SetAnnotations(mergePlatform(live.GetAnnotations(), want.GetAnnotations()))
	return permanent(o.r.Client.Update(ctx, live))
}

// mergePlatform is want's keys plus the live keys that the platform or kube set (which a Pack
// does not author).
func mergePlatform(live, want map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range live {
		if strings.HasPrefix(k, "platform/") || strings.Contains(k, "kubernetes.io/") {
			out[k] = v
		}
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}

// remove deletes an owned object; an absent one is done, one that is no longer owned is left.
// An Entry's Dashboard references go first (the operation was authorized to remove them, or
// there were none), and its eligible Interactions are closed, keeping their history: also when
// the Entry is already gone, since a process killed between the two finds it so after restart.
func (o *operation) remove(ctx context.Context, kind platformv1.PackResourceKind, name string) error {
	live := newLive(kind)
	err := o.r.Client.Get(ctx, client.ObjectKey{Namespace: o.kns, Name: name}, live)
	if apierrors.IsNotFound(err) {
		if kind == "Entry" {
			o.closeInteractions(ctx, name)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if live.GetLabels()[pack.PackLabel] != o.ip.Name {
		return failure("%s %s is no longer owned by this Pack", kind, name)
	}
	if kind == "Entry" {
		if err := o.removeDashboardReferences(ctx, name); err != nil {
			return err
		}
	}
	if err := o.r.Client.Delete(ctx, live); client.IgnoreNotFound(err) != nil {
		// Dependency protection refuses to delete what a published Entry still uses; the Entry
		// removed by an earlier step takes its publication along shortly, so a refusal is
		// retried for a while before it counts.
		if op := o.ip.Status.Operation; apierrors.IsForbidden(err) && op.StartedAt != nil && time.Since(op.StartedAt.Time) < dependencyGrace {
			return err
		}
		return permanent(err)
	}
	if kind == "Entry" {
		o.closeInteractions(ctx, name)
	}
	return nil
}

// closeInteractions closes the eligible Interactions of the removed Entry name (none open is
// done: closing is idempotent). A failure is logged: the Entry is gone either way.
func (o *operation) closeInteractions(ctx context.Context, name string) {
	if o.r.Interactions == nil {
		return
	}
	ns := &corev1.Namespace{}
	if err := o.r.Client.Get(ctx, client.ObjectKey{Name: o.ip.Namespace}, ns); err == nil {
		if _, err := o.r.Interactions.CloseInteractions(ctx, resourcenamespace.WorkspaceIDOf(ns), o.ip.Name, name); err != nil {
			log.FromContext(ctx).Error(err, "closing the Interactions of a removed Entry", "entry", name)
		}
	}
}

func (o *operation) removeDashboardReferences(ctx context.Context, entry string) error {
	if !o.ip.Definition.RemoveDashboardReferences {
		return nil
	}
	list := &platformv1.DashboardList{}
	if err := o.r.Client.List(ctx, list, client.InNamespace(o.ip.Namespace)); err != nil {
		return err
	}
	for i := range list.Items {
		d := &list.Items[i]
		kept := d.Definition.Entries[:0:0]
		for _, e := range d.Definition.Entries {
			if !(e.Namespace == platformv1.ResourceNamespace(o.ip.Name) && string(e.Name) == entry) {
				kept = append(kept, e)
			}
		}
		if len(kept) != len(d.Definition.Entries) {
			d.Definition.Entries = kept
			if err := o.r.Client.Update(ctx, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// compensate undoes the latest done step that is not yet undone: a create is deleted, an update
// and a remove are put back to the installed version's content.
func (o *operation) compensate(ctx context.Context) (ctrl.Result, error) {
	ip := o.ip
	op := ip.Status.Operation
	j := len(op.Steps) - 1
	for j >= 0 && (!op.Steps[j].Done || op.Steps[j].Compensated) {
		j--
	}
	if j < 0 {
		op.Phase = platformv1.PackOperationFailed
		ip.Status.State = platformv1.PackRolledBack
		return ctrl.Result{}, nil
	}
	s := &op.Steps[j]
	var err error
	switch pack.Action(s.Action) {
	case pack.ActionCreate:
		err = o.remove(ctx, s.Kind, string(s.Name))
	case pack.ActionUpdate, pack.ActionRemove:
		var want *unstructured.Unstructured
		if want, _, err = o.desired(ctx, op.FromDigest, s.Kind, string(s.Name)); err == nil {
			err = o.put(ctx, want, "")
		}
	}
	var sf *stepFailure
	if errors.As(err, &sf) {
		// What cannot be put back is reported, never retried forever: the journal goes on.
		op.Error += fmt.Sprintf("; compensating %s %s: %s", s.Kind, s.Name, sf.msg)
		err = nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	s.Compensated = true
	return ctrl.Result{Requeue: true}, nil
}

// finish ends an operation whose steps are all done.
func (o *operation) finish(ctx context.Context) error {
	ip := o.ip
	op := ip.Status.Operation
	op.Phase = platformv1.PackOperationDone
	if op.Kind == platformv1.PackOperationUninstall {
		if len(ip.Status.Preserved) == 0 {
			// Nothing modified, nothing referenced: the namespace the Pack created goes (unless a
			// person keeps something of their own there), then the record; the binding selections
			// stay in the SQL store for a reinstall. In this order, a restart in between finds the
			// record and finishes.
			kept, err := ReleaseNamespace(ctx, o.r.Client, o.r.Reader, ip.Namespace, platformv1.ResourceNamespace(ip.Name))
			if err != nil {
				return err
			}
			if err := o.r.Client.Delete(ctx, ip, client.Preconditions{UID: &ip.UID}); client.IgnoreNotFound(err) != nil {
				return err
			}
			o.deleted = true
			if len(kept) > 0 {
				o.r.Recorder.Eventf(ip, nil, corev1.EventTypeNormal, "Uninstalled", "Uninstall",
					"uninstalled %s; its namespace stays, with %s that the Pack did not install", ip.Name, strings.Join(kept, ", "))
			} else {
				o.r.Recorder.Eventf(ip, nil, corev1.EventTypeNormal, "Uninstalled", "Uninstall", "uninstalled %s and removed its namespace", ip.Name)
			}
			return nil
		}
		ip.Status.State = platformv1.PackDegraded
		var kept []platformv1.ManagedResource
		for _, m := range ip.Status.Resources {
			for _, p := range ip.Status.Preserved {
				if p.Kind == m.Kind && p.Name == m.Name {
					kept = append(kept, m)
				}
			}
		}
		ip.Status.Resources = kept
		return nil
	}
	to, err := o.archive(ctx, op.ToDigest)
	if err != nil {
		return err
	}
	previous := map[string]platformv1.ManagedResource{}
	for _, m := range ip.Status.Resources {
		previous[key(m.Kind, string(m.Name))] = m
	}
	var resources []platformv1.ManagedResource
	for _, r := range to.Resources {
		want, err := pack.Render(to, r, o.kns, o.bindings())
		if err != nil {
			return err
		}
		m := platformv1.ManagedResource{Kind: r.Kind, Name: platformv1.ResourceName(r.Name), ArchivePath: r.Path,
			Fingerprint: pack.Fingerprint(want.Object), SuppliedByVersion: platformv1.SemanticVersion(to.Manifest.Metadata.Version), MatchesInstalled: true}
		live := newLive(r.Kind)
		if err := o.r.Client.Get(ctx, client.ObjectKeyFromObject(want), live); err == nil {
			// The installed fingerprint is the live content as the kube API keeps it (defaults
			// included), so that an untouched resource matches it later.
			m.Revision, m.Fingerprint = live.GetGeneration(), pack.Fingerprint(live.Object)
		}
		if p, ok := previous[key(r.Kind, r.Name)]; ok && p.Fingerprint == m.Fingerprint && p.SuppliedByVersion != "" {
			m.SuppliedByVersion = p.SuppliedByVersion
		}
		resources = append(resources, m)
	}
	ip.Status.Resources = resources
	if op.FromDigest != "" && op.FromDigest != op.ToDigest {
		ip.Status.RetainedDigest, ip.Status.RetainedVersion = op.FromDigest, ip.Status.InstalledVersion
		ip.Status.RetainedSource = ip.Status.InstalledSource
	}
	// The source of what is installed now: the definition's, whose digest is the operation's
	// (a request changes the definition only when no operation is under way).
	source := ip.Definition.Source
	source.Digest = op.ToDigest
	ip.Status.InstalledSource = &source
	ip.Status.InstalledDigest = op.ToDigest
	ip.Status.InstalledVersion = platformv1.SemanticVersion(to.Manifest.Metadata.Version)
	ip.Status.State = platformv1.PackInstalled
	now := metav1.NewTime(time.Now())
	ip.Status.InstalledAt = &now
	o.r.Recorder.Eventf(ip, nil, corev1.EventTypeNormal, "Installed", string(op.Kind), "%s %s: %d steps", ip.Name, to.Manifest.Metadata.Version, len(op.Steps))
	return o.observe(ctx)
}

// observe recomputes, for the installed resources, whether each still matches what was
// installed (from its live fingerprint), and the readiness from the bindings.
func (o *operation) observe(ctx context.Context) error {
	ip := o.ip
	for i := range ip.Status.Resources {
		m := &ip.Status.Resources[i]
		live := newLive(m.Kind)
		err := o.r.Client.Get(ctx, client.ObjectKey{Namespace: o.kns, Name: string(m.Name)}, live)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err != nil {
			o.missing = append(o.missing, fmt.Sprintf("status.resources[%d]: %s %q not found", i, m.Kind, m.Name))
		}
		m.MatchesInstalled = err == nil && live.GetLabels()[pack.PackLabel] == ip.Name && pack.Fingerprint(live.Object) == m.Fingerprint
	}
	if ip.Status.InstalledDigest == "" || ip.Status.State == platformv1.PackDegraded {
		return nil
	}
	installed, err := o.archive(ctx, ip.Status.InstalledDigest)
	if err != nil {
		return err
	}
	cs, err := o.plan(ctx, installed, installed)
	if err != nil {
		return err
	}
	ip.Status.Readiness = readinessOf(cs.Readiness)
	return nil
}

func readinessOf(r string) platformv1.PackReadiness {
	switch r {
	case pack.ReadinessNeedsConfiguration:
		return "NeedsConfiguration"
	case pack.ReadinessMissingRequirement:
		return "MissingRequirement"
	}
	return "Ready"
}

// packsOf maps an object to the installation that owns it (its label), else to the
// installations of its workspace.
func (r *Reconciler) packsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	workspace, err := resourcenamespace.WorkspaceOfName(ctx, r.Client, obj.GetNamespace())
	if err != nil {
		return nil
	}
	if owner := obj.GetLabels()[pack.PackLabel]; owner != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: workspace, Name: owner}}}
	}
	packs := &platformv1.InstalledPackList{}
	if err := r.Client.List(ctx, packs, client.InNamespace(workspace)); err != nil {
		log.FromContext(ctx).Error(err, "listing installed packs of a workspace")
		return nil
	}
	return reconcileutil.Requests(packs)
}
