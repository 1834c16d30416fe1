package native

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// selfSubjectAccessReviewREST answers `kubectl auth can-i` with the server's own authorizer, so a
// caller sees exactly what the API will allow them.
type selfSubjectAccessReviewREST struct {
	authorizer authorizer.UnconditionalAuthorizer
}

func (*selfSubjectAccessReviewREST) New() runtime.Object {
	return &authorizationv1.SelfSubjectAccessReview{}
}
func (*selfSubjectAccessReviewREST) Destroy() {}
func (*selfSubjectAccessReviewREST) NamespaceScoped() bool {
	return false
}
func (*selfSubjectAccessReviewREST) GetSingularName() string { return "selfsubjectaccessreview" }

func (r *selfSubjectAccessReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectAccessReview: %T", obj))
	}
	spec := review.Spec
	if (spec.ResourceAttributes == nil) == (spec.NonResourceAttributes == nil) {
		return nil, apierrors.NewBadRequest("exactly one of spec.resourceAttributes and spec.nonResourceAttributes must be set")
	}
	user, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user in the request")
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj); err != nil {
			return nil, err
		}
	}
	attrs := authorizer.AttributesRecord{User: user}
	if ra := spec.ResourceAttributes; ra != nil {
		attrs.ResourceRequest = true
		attrs.Verb, attrs.Namespace, attrs.APIGroup, attrs.APIVersion = ra.Verb, ra.Namespace, ra.Group, ra.Version
		attrs.Resource, attrs.Subresource, attrs.Name = ra.Resource, ra.Subresource, ra.Name
	} else {
		attrs.Verb, attrs.Path = spec.NonResourceAttributes.Verb, spec.NonResourceAttributes.Path
	}
	decision, reason, err := r.authorizer.Authorize(ctx, attrs)
	out := review.DeepCopy()
	out.Status = authorizationv1.SubjectAccessReviewStatus{
		Allowed: decision == authorizer.DecisionAllow,
		Denied:  decision == authorizer.DecisionDeny,
		Reason:  reason,
	}
	if err != nil {
		out.Status.EvaluationError = err.Error()
	}
	return out, nil
}

// selfSubjectReviewREST answers `kubectl auth whoami`.
type selfSubjectReviewREST struct{}

func (selfSubjectReviewREST) New() runtime.Object     { return &authenticationv1.SelfSubjectReview{} }
func (selfSubjectReviewREST) Destroy()                {}
func (selfSubjectReviewREST) NamespaceScoped() bool   { return false }
func (selfSubjectReviewREST) GetSingularName() string { return "selfsubjectreview" }

func (selfSubjectReviewREST) Create(ctx context.Context, obj runtime.Object, _ rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	user, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user in the request")
	}
	out := &authenticationv1.SelfSubjectReview{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Now()}}
	out.Status.UserInfo = authenticationv1.UserInfo{Username: user.GetName(), UID: user.GetUID(), Groups: user.GetGroups()}
	for k, v := range user.GetExtra() {
		if out.Status.UserInfo.Extra == nil {
			out.Status.UserInfo.Extra = map[string]authenticationv1.ExtraValue{}
		}
		out.Status.UserInfo.Extra[k] = v
	}
	return out, nil
}
