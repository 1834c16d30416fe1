// Package admission enforces the platform's rules about Management objects once, as a validating
// admission plugin of the embedded kube API, so that kubectl, GitOps, the controllers and the
// service API all meet the same code: dependency protection of Agents, user Flows and Model
// providers, system-managed Flows, and the kinds only the platform writes (FlowVersion,
// PublishedEntry). "The platform" is the control plane's loopback identity; every other caller,
// the administrator's certificate and the service API included, is held to the rules.
package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/ratelimit"
)

// PluginName names the plugin among the control plane's admission plugins.
const PluginName = "PlatformRules"

// Rules is the validating admission plugin. It reads what a rule needs (the PublishedEntries of
// a workspace, the ModelProfiles of a namespace) through a client it receives once the server
// runs; until then a request that needs a read is refused, never let through.
type Rules struct {
	*apiadmission.Handler
	reader atomic.Pointer[client.Reader]
}

var _ apiadmission.ValidationInterface = (*Rules)(nil)

// New returns the rules, without a reader yet (see SetReader).
func New() *Rules {
	return &Rules{Handler: apiadmission.NewHandler(apiadmission.Create, apiadmission.Update, apiadmission.Delete)}
}

// SetReader gives the rules the client they read with: the control plane's loopback client,
// available once the server has started. Reads are uncached and stay in the workspace or the one
// namespace concerned, so they always see the latest writes.
func (r *Rules) SetReader(c client.Reader) { r.reader.Store(&c) }

// IsPlatform says whether u is the platform itself: the control plane's loopback identity, which
// its controllers and the platform's own writes use. Impersonating it is refused by the control
// plane's authorizer, so no other caller can claim it.
func IsPlatform(u user.Info) bool {
	return u != nil && u.GetName() == user.APIServerUser && slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup)
}

// OfficialSourceRegistry is the built-in registration, which is never deleted (the name is
// apiserver/sourceregistries.OfficialName; repeated to keep this package free of it).
const OfficialSourceRegistry = "agentstration-official"

// Validate implements admission.ValidationInterface.
func (r *Rules) Validate(ctx context.Context, a apiadmission.Attributes, _ apiadmission.ObjectInterfaces) error {
	if a.GetResource().Group == "" && a.GetResource().Resource == "namespaces" && a.GetSubresource() == "" &&
		(a.GetOperation() == apiadmission.Create || a.GetOperation() == apiadmission.Update) {
		return validLimits(a)
	}
	if a.GetResource().Group != platformv1.GroupVersion.Group || IsPlatform(a.GetUserInfo()) {
		return nil
	}
	switch a.GetResource().Resource {
	case "flowversions":
		return refuse(a, "FlowVersion objects are written only by the platform, when a Flow version is published (POST /api/flows/{name}/versions)")
	case "publishedentries":
		return refuse(a, "PublishedEntry objects are written only by the platform, when an Entry is published")
	case "flows":
		if msg := systemManagedRefusal(a); msg != "" {
			return refuse(a, msg)
		}
		if err := validateExpiries(a); err != nil {
			return err
		}
		if a.GetOperation() == apiadmission.Delete && a.GetSubresource() == "" {
			return r.refuseIfReferenced(ctx, a, "Flow", FlowReferrer)
		}
	case "tools":
		if err := validateExpiries(a); err != nil {
			return err
		}
	case "entries":
		if err := validateExpiries(a); err != nil {
			return err
		}
	case "agents":
		if err := validateExpiries(a); err != nil {
			return err
		}
		if a.GetOperation() == apiadmission.Delete && a.GetSubresource() == "" {
			return r.refuseIfReferenced(ctx, a, "Agent", agentReferrer)
		}
	case "sourceregistries":
		if a.GetOperation() == apiadmission.Delete && a.GetSubresource() == "" && a.GetName() == OfficialSourceRegistry {
			return refuse(a, fmt.Sprintf("the official Source registry registration %q cannot be deleted; disable it instead (definition.enabled: false)", a.GetName()))
		}
	case "modelproviders":
		if a.GetOperation() == apiadmission.Delete && a.GetSubresource() == "" {
			return r.refuseIfReferenced(ctx, a, "Model provider", modelProviderReferrer)
		}
	}
	return nil
}

// referrer finds what still refers to the object name of namespace ns, described for people
// ("published entry \"x\""), or "" when nothing does.
type referrer func(ctx context.Context, c client.Reader, ns, name string) (string, error)

func (r *Rules) refuseIfReferenced(ctx context.Context, a apiadmission.Attributes, kind string, find referrer) error {
	c := r.reader.Load()
	if c == nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("the platform's admission rules cannot check yet whether %s %q is referenced (the server is starting); retry", kind, a.GetName()))
	}
	by, err := find(ctx, *c, a.GetNamespace(), a.GetName())
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("checking whether %s %q is referenced: %w", kind, a.GetName(), err))
	}
	if by == "" {
		return nil
	}
	return refuse(a, fmt.Sprintf("%s %q is referenced by %s", kind, a.GetName(), by))
}

// refuse is the Forbidden of a rule: kubectl prints it with the reason, and the cause of type
// RuleRefusedCause lets the service API answer 409 with the same reason.
func refuse(a apiadmission.Attributes, reason string) error {
	err := apiadmission.NewForbidden(a, errors.New(reason))
	var status *apierrors.StatusError
	if errors.As(err, &status) {
		if status.ErrStatus.Details == nil {
			status.ErrStatus.Details = &metav1.StatusDetails{}
		}
		status.ErrStatus.Details.Causes = append(status.ErrStatus.Details.Causes,
			metav1.StatusCause{Type: platformv1.RuleRefusedCause, Message: reason})
	}
	return err
}

// labelsOf are the labels of obj; nil when obj is nil or has no metadata.
func labelsOf(obj runtime.Object) map[string]string {
	if obj == nil {
		return nil
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.GetLabels()
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return accessor.GetLabels()
}

// validLimits refuses a workspace namespace whose limit annotations (ratelimit.Annotations) are not
// limits, with the annotation's field path: a typo must not silently leave a workspace unlimited.
func validLimits(a apiadmission.Attributes) error {
	obj, err := meta.Accessor(a.GetObject())
	if err != nil {
		return nil
	}
	var errs field.ErrorList
	annotations := field.NewPath("metadata", "annotations")
	for key := range ratelimit.Annotations {
		if v, ok := obj.GetAnnotations()[key]; ok {
			if _, err := ratelimit.ParseLimit(v); err != nil {
				errs = append(errs, field.Invalid(annotations.Key(key), v, "a whole number from 0 (no limit) up"))
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Namespace"}, a.GetName(), errs)
}
