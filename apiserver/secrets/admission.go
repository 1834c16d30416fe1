package secrets

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"

	"platform.dev/platform/apis/platform/ownerscope"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/identity"
)

// Admission enforces, in the embedded kube API, the rules of scopes that a CRD schema cannot
// express, so that kubectl, GitOps, the controllers and the service API meet them alike:
//
//   - a usePolicy grant of a Secret or a Vault targets the owner's scope or a scope below it,
//     never a sibling, an ancestor or another tenant's branch, and names an existing scope;
//   - a Secret's vault.scopeRef and a ModelProvider's credential.scopeRef name the object's own
//     scope or an ancestor (checked by the Resolver's Reach, the rule every consumer uses);
//   - the namespaces of the instance and of tenants hold only Secrets and Vaults, and a workspace's
//     Pack namespaces hold none (Packs carry Secrets only as bindings).
//
// Only creates and updates whose checked fields changed are validated, so that an object stored
// before a tenant disappeared can still be changed otherwise or deleted.
type Admission struct {
	*admission.Handler
	// Identity places workspaces and tenants; nil places every namespace as a workspace.
	Identity *identity.Service

	namespaces corelisters.NamespaceLister
}

var (
	_ admission.ValidationInterface                = (*Admission)(nil)
	_ initializer.WantsExternalKubeInformerFactory = (*Admission)(nil)
)

// NewAdmission returns the admission plugin over the identity store ids.
func NewAdmission(ids *identity.Service) *Admission {
	return &Admission{Handler: admission.NewHandler(admission.Create, admission.Update), Identity: ids}
}

// SetExternalKubeInformerFactory implements initializer.WantsExternalKubeInformerFactory: Pack
// namespaces are told apart by their labels, read from the server's namespace informer.
func (a *Admission) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	a.namespaces = f.Core().V1().Namespaces().Lister()
	a.SetReadyFunc(f.Core().V1().Namespaces().Informer().HasSynced)
}

// ValidateInitialization implements admission.InitializationValidator.
func (a *Admission) ValidateInitialization() error {
	if a.namespaces == nil {
		return errors.New("secrets admission: no namespace informer")
	}
	return nil
}

// resolver is the Resolver over the current scope tree; admission uses only its scope rules.
func (a *Admission) resolver() *Resolver {
	return &Resolver{Tree: IdentityTree{Identity: a.Identity, Namespaces: listedNamespaces{a.namespaces}}}
}

type listedNamespaces struct{ lister corelisters.NamespaceLister }

func (l listedNamespaces) Namespace(_ context.Context, name string) (*corev1.Namespace, error) {
	if l.lister == nil {
		return nil, nil
	}
	ns, err := l.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return ns, err
}

// Validate implements admission.ValidationInterface.
func (a *Admission) Validate(ctx context.Context, attrs admission.Attributes, _ admission.ObjectInterfaces) error {
	if attrs.GetResource().Group != platformv1.GroupVersion.Group || attrs.GetSubresource() != "" || attrs.GetNamespace() == "" {
		return nil
	}
	if !a.WaitForReady() {
		return admission.NewForbidden(attrs, errors.New("not yet ready to handle request"))
	}
	if attrs.GetOperation() == admission.Update && sameDefinition(attrs.GetObject(), attrs.GetOldObject()) {
		// Metadata (a finalizer on its way out) or nothing changed: never refuse it, whatever
		// happened to the object's scope since it was stored.
		return nil
	}
	resource := attrs.GetResource().Resource
	r := a.resolver()
	if ownerscope.IsReservedNamespace(attrs.GetNamespace()) && resource != "secrets" && resource != "vaults" {
		return admission.NewForbidden(attrs, fmt.Errorf("namespace %s holds only the Secrets and Vaults of its scope", attrs.GetNamespace()))
	}
	var check func(context.Context, *Resolver, Place, runtime.Object, runtime.Object) (field.ErrorList, error)
	switch resource {
	case "secrets":
		check = a.checkSecret
	case "vaults":
		check = a.checkVault
	case "modelproviders":
		check = a.checkModelProvider
	default:
		return nil
	}
	owner, err := r.Tree.OfNamespace(ctx, attrs.GetNamespace())
	if errors.Is(err, ErrScopeNotFound) {
		return admission.NewForbidden(attrs, fmt.Errorf("namespace %s belongs to no scope of this instance", attrs.GetNamespace()))
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if owner.ResourceNamespace != "" && (resource == "secrets" || resource == "vaults") {
		return admission.NewForbidden(attrs, fmt.Errorf("Secrets and Vaults live in the default resource namespace of their scope, not in resource namespace %s", owner.ResourceNamespace))
	}
	errs, err := check(ctx, r, owner, attrs.GetObject(), attrs.GetOldObject())
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(attrs.GetKind().GroupKind(), attrs.GetName(), errs)
	}
	return nil
}

func (a *Admission) checkSecret(ctx context.Context, r *Resolver, owner Place, obj, old runtime.Object) (field.ErrorList, error) {
	var secret, before platformv1.Secret
	if err := decode(obj, &secret); err != nil {
		return nil, err
	}
	hasOld := old != nil
	if hasOld {
		if err := decode(old, &before); err != nil {
			return nil, err
		}
	}
	def := field.NewPath("definition")
	var errs field.ErrorList
	if !hasOld || before.Definition.Vault.ScopeRef != secret.Definition.Vault.ScopeRef {
		errs = append(errs, a.checkReach(ctx, r, owner, def.Child("vault"), secret.Definition.Vault.ScopeRef)...)
	}
	if !hasOld || !equality.Semantic.DeepEqual(before.Definition.UsePolicy, secret.Definition.UsePolicy) {
		grantErrs, err := a.checkGrants(ctx, r, owner, def.Child("usePolicy", "grants"), secret.Definition.UsePolicy)
		if err != nil {
			return nil, err
		}
		errs = append(errs, grantErrs...)
	}
	return errs, nil
}

func (a *Admission) checkVault(ctx context.Context, r *Resolver, owner Place, obj, old runtime.Object) (field.ErrorList, error) {
	var vault, before platformv1.Vault
	if err := decode(obj, &vault); err != nil {
		return nil, err
	}
	if old != nil {
		if err := decode(old, &before); err != nil {
			return nil, err
		}
		if equality.Semantic.DeepEqual(before.Definition.UsePolicy, vault.Definition.UsePolicy) {
			return nil, nil
		}
	}
	return a.checkGrants(ctx, r, owner, field.NewPath("definition", "usePolicy", "grants"), vault.Definition.UsePolicy)
}

func (a *Admission) checkModelProvider(ctx context.Context, r *Resolver, owner Place, obj, old runtime.Object) (field.ErrorList, error) {
	var provider, before platformv1.ModelProvider
	if err := decode(obj, &provider); err != nil {
		return nil, err
	}
	credential := provider.Definition.Credential
	if credential == nil {
		return nil, nil
	}
	if old != nil {
		if err := decode(old, &before); err != nil {
			return nil, err
		}
		if before.Definition.Credential != nil && before.Definition.Credential.ScopeRef == credential.ScopeRef {
			return nil, nil
		}
	}
	return a.checkReach(ctx, r, owner, field.NewPath("definition", "credential"), credential.ScopeRef), nil
}

// checkReach refuses a reference whose scopeRef is not the referrer's own scope or an ancestor.
func (a *Admission) checkReach(ctx context.Context, r *Resolver, owner Place, path *field.Path, ref platformv1.ScopeRef) field.ErrorList {
	if _, err := r.Reach(ctx, owner, path.String(), ref); err != nil {
		// The Refusal starts with the field path, which the field error names itself.
		message := strings.TrimPrefix(err.Error(), path.Child("scopeRef").String()+": ")
		return field.ErrorList{field.Invalid(path.Child("scopeRef"), ref, message)}
	}
	return nil
}

// checkGrants refuses grants that name no scope of the instance or a scope outside the owner's
// branch.
func (a *Admission) checkGrants(ctx context.Context, r *Resolver, owner Place, path *field.Path, policy *platformv1.UsePolicy) (field.ErrorList, error) {
	if policy == nil {
		return nil, nil
	}
	var errs field.ErrorList
	for i, grant := range policy.Grants {
		p := path.Index(i).Child("scopeRef")
		target, err := r.Tree.Of(ctx, grant.ScopeRef)
		if errors.Is(err, ErrScopeNotFound) {
			errs = append(errs, field.Invalid(p, grant.ScopeRef, "names no scope of this instance"))
			continue
		}
		if err != nil {
			return nil, err
		}
		if !owner.Contains(target) {
			errs = append(errs, field.Invalid(p, grant.ScopeRef, fmt.Sprintf(
				"a grant of an object owned by %s targets %s or a scope below it, never a sibling, an ancestor or another tenant's branch", owner, owner)))
		}
	}
	return errs, nil
}

// sameDefinition reports whether two versions of an object have equal definitions.
func sameDefinition(obj, old runtime.Object) bool {
	u, ok1 := obj.(*unstructured.Unstructured)
	o, ok2 := old.(*unstructured.Unstructured)
	return ok1 && ok2 && equality.Semantic.DeepEqual(u.Object["definition"], o.Object["definition"])
}

// decode converts the unstructured object the CRD storage hands admission into its type.
func decode(obj runtime.Object, into any) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("admission: unexpected object type %T", obj)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), into)
}
