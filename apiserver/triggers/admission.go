package triggers

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/kubeauth"
	"platform.dev/platform/internal/publication"
	"platform.dev/platform/internal/resourcenamespace"
	"platform.dev/platform/internal/schedule"
)

// Admission holds the rules of Triggers in the embedded kube API, so that kubectl, GitOps and the
// service API meet them alike:
//
//   - the owner (annotation platform/owner) is the Principal that created the Trigger or last
//     changed its definition: a Principal's write through the kube API sets it to that Principal
//     whatever the annotation says, and cannot change it otherwise. Callers that are no Principal
//     (the platform, the service API, an administrator's certificate) keep the annotation as they
//     write it, and the owner it had when they leave it out;
//   - a definition is valid beyond what the CRD schema says: a strict IANA time zone, an
//     expression that parses for its type, policy durations within their bounds, a once instant
//     ahead (when the schedule is created or changed), and a target Flow (and pinned version)
//     that exists in a resource namespace of the Trigger's own workspace (when the target is
//     created or changed). A refusal is Invalid (422) with the field paths.
type Admission struct {
	*admission.Handler
	// Clock is the time source; time.Now when nil.
	Clock  func() time.Time
	reader atomic.Pointer[client.Reader]
}

var (
	_ admission.MutationInterface   = (*Admission)(nil)
	_ admission.ValidationInterface = (*Admission)(nil)
)

// NewAdmission returns the Trigger rules, without a reader yet (see SetReader).
func NewAdmission() *Admission {
	return &Admission{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// SetReader gives the rules the client they read the target Flows with, once the kube API
// serves; until then a write that needs the check is refused (503), never let through.
func (a *Admission) SetReader(c client.Reader) { a.reader.Store(&c) }

func concerned(attrs admission.Attributes) bool {
	return attrs.GetResource().Group == platformv1.GroupVersion.Group && attrs.GetResource().Resource == "triggers" && attrs.GetSubresource() == ""
}

// principalOf is the Principal a kube user stands for, "" for users that are none.
func principalOf(u user.Info) string {
	if u == nil {
		return ""
	}
	if ids := u.GetExtra()[kubeauth.ExtraPrincipalID]; len(ids) == 1 {
		return ids[0]
	}
	return ""
}

// Admit sets the owner (see Admission).
func (a *Admission) Admit(_ context.Context, attrs admission.Attributes, _ admission.ObjectInterfaces) error {
	if !concerned(attrs) {
		return nil
	}
	obj, ok := attrs.GetObject().(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	var old *unstructured.Unstructured
	if attrs.GetOperation() == admission.Update {
		old, _ = attrs.GetOldObject().(*unstructured.Unstructured)
	}
	owner, given := obj.GetAnnotations()[platformv1.TriggerOwnerAnnotation]
	oldOwner := ""
	if old != nil {
		oldOwner = old.GetAnnotations()[platformv1.TriggerOwnerAnnotation]
	}
	switch principal := principalOf(attrs.GetUserInfo()); {
	case principal != "" && (old == nil || !equality.Semantic.DeepEqual(obj.Object["definition"], old.Object["definition"])):
		owner = principal
	case principal != "" || !given:
		owner = oldOwner
	}
	annotations := obj.GetAnnotations()
	if owner == "" {
		if _, ok := annotations[platformv1.TriggerOwnerAnnotation]; ok {
			delete(annotations, platformv1.TriggerOwnerAnnotation)
			obj.SetAnnotations(annotations)
		}
		return nil
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[platformv1.TriggerOwnerAnnotation] = owner
	obj.SetAnnotations(annotations)
	return nil
}

// Validate checks the definition (see Admission).
func (a *Admission) Validate(ctx context.Context, attrs admission.Attributes, _ admission.ObjectInterfaces) error {
	if !concerned(attrs) {
		return nil
	}
	t, err := decode(attrs.GetObject())
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	var old *platformv1.Trigger
	if attrs.GetOperation() == admission.Update {
		if old, err = decode(attrs.GetOldObject()); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		if equality.Semantic.DeepEqual(old.Definition, t.Definition) {
			// Metadata or nothing changed: never refuse it, whatever happened since it was stored.
			return nil
		}
	}
	now := time.Now()
	if a.Clock != nil {
		now = a.Clock()
	}
	anchor := t.CreationTimestamp.Time
	if anchor.IsZero() {
		anchor = now
	}
	compiled, errs := schedule.CompileTrigger(&t.Definition, anchor)
	if len(errs) == 0 && (old == nil || !equality.Semantic.DeepEqual(old.Definition.Source, t.Definition.Source)) {
		errs = append(errs, compiled.CheckAhead(&t.Definition, now)...)
	}
	if old == nil || !equality.Semantic.DeepEqual(old.Definition.Target.Flow, t.Definition.Target.Flow) {
		targetErrs, err := a.checkTarget(ctx, attrs.GetNamespace(), t.Definition.Target.Flow)
		if err != nil {
			return err
		}
		errs = append(errs, targetErrs...)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(attrs.GetKind().GroupKind(), attrs.GetName(), errs)
	}
	return nil
}

var flowPath = field.NewPath("definition", "target", "flow")

// checkTarget checks that the target Flow, and its pinned version, exist in a resource namespace
// of the workspace of namespace: never another workspace's.
func (a *Admission) checkTarget(ctx context.Context, namespace string, ref *platformv1.FlowReference) (field.ErrorList, error) {
	if ref == nil {
		return nil, nil // the schema requires it for a flow target
	}
	reader := a.reader.Load()
	if reader == nil {
		return nil, apierrors.NewServiceUnavailable("the Trigger rules cannot check the target Flow yet (the server is starting); retry")
	}
	ns, err := resourcenamespace.Resolve(ctx, *reader, namespace, ref.Namespace)
	switch {
	case errors.Is(err, resourcenamespace.ErrNotFound):
		return field.ErrorList{field.Invalid(flowPath.Child("namespace"), ref.Namespace,
			fmt.Sprintf("resource namespace %s does not exist in the Trigger's workspace; a Trigger targets a Flow of its own workspace only", ref.Namespace))}, nil
	case err != nil:
		return nil, apierrors.NewInternalError(fmt.Errorf("resolving the target Flow's namespace: %w", err))
	}
	err = (*reader).Get(ctx, client.ObjectKey{Namespace: ns, Name: string(ref.Name)}, &platformv1.Flow{})
	switch {
	case apierrors.IsNotFound(err):
		return field.ErrorList{field.NotFound(flowPath.Child("name"), ref.Name)}, nil
	case err != nil:
		return nil, apierrors.NewInternalError(fmt.Errorf("reading the target Flow: %w", err))
	case ref.Version == "":
		return nil, nil
	}
	version, err := publication.FindFlowVersion(ctx, *reader, ns, string(ref.Name), ref.Version)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("reading the target Flow's versions: %w", err))
	}
	if version == nil {
		return field.ErrorList{field.NotFound(flowPath.Child("version"), ref.Version)}, nil
	}
	return nil, nil
}

func decode(obj runtime.Object) (*platformv1.Trigger, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		if t, ok := obj.(*platformv1.Trigger); ok {
			return t, nil
		}
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	t := &platformv1.Trigger{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, t); err != nil {
		return nil, fmt.Errorf("decoding the Trigger: %w", err)
	}
	return t, nil
}
