package admission

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiadmission "k8s.io/apiserver/pkg/admission"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// validateExpiries refuses a Flow or Tool whose question expiries do not fit their questions
// (a Proceed default that does not answer the question, a Reject of a Text question, ...), as
// 422 Invalid with the field path of each finding. The CRD schema cannot say it: a default
// answer is any JSON, which CEL rules do not see.
func validateExpiries(a apiadmission.Attributes) error {
	if a.GetSubresource() != "" || (a.GetOperation() != apiadmission.Create && a.GetOperation() != apiadmission.Update) {
		return nil
	}
	u, ok := a.GetObject().(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	definition := field.NewPath("definition")
	var errs field.ErrorList
	var kind string
	switch a.GetResource().Resource {
	case "flows":
		kind = "Flow"
		var flow platformv1.Flow
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &flow); err != nil {
			return nil // the schema refuses what does not decode
		}
		errs = platformv1.ValidateFlowExpiries(&flow.Definition, definition)
	case "tools":
		kind = "Tool"
		var tool platformv1.Tool
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &tool); err != nil {
			return nil
		}
		errs = platformv1.ValidateToolApprovalExpiry(&tool.Definition, definition)
	case "agents":
		kind = "Agent"
		var agent platformv1.Agent
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &agent); err != nil {
			return nil
		}
		errs = platformv1.ValidateBudgetExpiries(agent.Definition.Budgets, definition.Child("budgets"))
	case "entries":
		kind = "Entry"
		var entry platformv1.Entry
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &entry); err != nil {
			return nil
		}
		errs = platformv1.ValidateBudgetExpiries(entry.Definition.Budgets, definition.Child("budgets"))
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Group: platformv1.GroupVersion.Group, Kind: kind}, a.GetName(), errs)
}
