package admission

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiadmission "k8s.io/apiserver/pkg/admission"

	"platform.dev/platform/apiserver/usage"
)

// validBudgets refuses a workspace namespace whose budget annotations (usage.TokensAnnotations,
// usage.CostAnnotations) do not parse, with the annotation's field path: a typo must not
// silently leave a workspace without its budget.
func validBudgets(a apiadmission.Attributes) error {
	obj, err := meta.Accessor(a.GetObject())
	if err != nil {
		return nil
	}
	var errs field.ErrorList
	annotations := field.NewPath("metadata", "annotations")
	for _, p := range usage.Periods {
		if v, ok := obj.GetAnnotations()[usage.TokensAnnotations[p]]; ok {
			if _, err := usage.ParseTokens(v); err != nil {
				errs = append(errs, field.Invalid(annotations.Key(usage.TokensAnnotations[p]), v, err.Error()))
			}
		}
		if v, ok := obj.GetAnnotations()[usage.CostAnnotations[p]]; ok {
			if _, _, err := usage.ParseCost(v); err != nil {
				errs = append(errs, field.Invalid(annotations.Key(usage.CostAnnotations[p]), v, err.Error()))
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Namespace"}, a.GetName(), errs)
}
