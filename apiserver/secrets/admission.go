package secrets

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"platform.dev/platform/apis/platform/scope"
	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Admission enforces, in the embedded kube API, the rules of scopes that a CRD schema cannot
// express, so that kubectl, GitOps, the controllers and the service API meet them alike:
//
//   - a usePolicy grant of a Secret or a Vault targets the owner's scope or a scope below it,
//     never a sibling, an ancestor or another tenant's branch, and names an existing scope;
//   - a Secret's vault.scopeRef and a ModelProvider's credential.scopeRef name the object's own
//     scope or an ancestor (checked by the Resolver's Reach, the rule every consumer uses);
//   - the namespaces of the instance and of tenants hold only Secrets and Vaults.
//
// Only creates and updates whose checked fields changed are validated, so that an object stored
// before a tenant disappeared can still be changed otherwise or deleted.
type Admission struct {
	*admission.Handler
	Resolver *Resolver
}

var _ admission.ValidationInterface = (*Admission)(nil)

// NewAdmission returns the admission plugin over tree.
func NewAdmission(tree Tree) *Admission {
	return &Admission{Handler: admission.NewHandler(admission.Create, admission.Update), Resolver: &Resolver{Tree: tree}}
}

// Validate implements admission.ValidationInterface.
func (a *Admission) Validate(ctx context.Context, attrs admission.Attributes, _ admission.ObjectInterfaces) error {
	if attrs.GetResource().Group != platformv1.GroupVersion.Group || attrs.GetSubresource() != "" || attrs.GetNamespace() == "" {
		return nil
	}
	resource := attrs.GetResource().Resource
	if scope.IsReservedNamespace(attrs.GetNamespace()) && resource != "secrets" && resource != "vaults" {
		return admission.NewForbidden(attrs, fmt.Errorf("namespace %s holds only the Secrets and Vaults of its scope", attrs.GetNamespace()))
	}
	var check func(context.Context, Place, runtime.Object, runtime.Object) (field.ErrorList, error)
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
	owner, err := a.Resolver.Tree.OfNamespace(ctx, attrs.GetNamespace())
	if errors.Is(err, ErrScopeNotFound) {
		return admission.NewForbidden(attrs, fmt.Errorf("namespace %s belongs to no scope of this instance", attrs.GetNamespace()))
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	errs, err := check(ctx, owner, attrs.GetObject(), attrs.GetOldObject())
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(attrs.GetKind().GroupKind(), attrs.GetName(), errs)
	}
	return nil
}

func (a *Admission) checkSecret(ctx context.Context, owner Place, obj, old runtime.Object) (field.ErrorList, error) {
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
		errs = append(errs, a.checkReach(ctx, owner, def.Child("vault"), secret.Definition.Vault.ScopeRef)...)
	}
	if !hasOld || !equality.Semantic.DeepEqual(before.Definition.UsePolicy, secret.Definition.UsePolicy) {
		grantErrs, err := a.checkGrants(ctx, owner, def.Child("usePolicy", "grants"), secret.Definition.UsePolicy)
		if err != nil {
			return nil, err
		}
		errs = append(errs, grantErrs...)
	}
	return errs, nil
}

func (a *Admission) checkVault(ctx context.Context, owner Place, obj, old runtime.Object) (field.ErrorList, error) {
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
	return a.checkGrants(ctx, owner, field.NewPath("definition", "usePolicy", "grants"), vault.Definition.UsePolicy)
}

func (a *Admission) checkModelProvider(ctx context.Context, owner Place, obj, old runtime.Object) (field.ErrorList, error) {
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
	return a.checkReach(ctx, owner, field.NewPath("definition", "credential"), credential.ScopeRef), nil
}

// checkReach refuses a reference whose scopeRef is not the referrer's own scope or an ancestor.
func (a *Admission) checkReach(ctx context.Context, owner Place, path *field.Path, ref platformv1.ScopeRef) field.ErrorList {
	if _, err := a.Resolver.Reach(ctx, owner, path.String(), ref); err != nil {
		// The Refusal starts with the field path, which the field error names itself.
		message := strings.TrimPrefix(err.Error(), path.Child("scopeRef").String()+": ")
		return field.ErrorList{field.Invalid(path.Child("scopeRef"), ref, message)}
	}
	return nil
}

// checkGrants refuses grants that name no scope of the instance or a scope outside the owner's
// branch.
func (a *Admission) checkGrants(ctx context.Context, owner Place, path *field.Path, policy *platformv1.UsePolicy) (field.ErrorList, error) {
	if policy == nil {
		return nil, nil
	}
	var errs field.ErrorList
	for i, grant := range policy.Grants {
		p := path.Index(i).Child("scopeRef")
		target, err := a.Resolver.Tree.Of(ctx, grant.ScopeRef)
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

// decode converts the unstructured object the CRD storage hands admission into its type.
func decode(obj runtime.Object, into any) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("admission: unexpected object type %T", obj)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), into)
}
