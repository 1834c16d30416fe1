package modelprovider

import (
	"fmt"
	"net/url"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// updateStatus writes what a complete reconcile observed.
func updateStatus(s *scope) {
	setReadyCondition(s)
	reconcileutil.Observed(&s.provider.Status.ResourceStatus, s.provider.Generation)
}

// validateDefinition checks what the provider needs to be called at all: every type but
// Deterministic needs an absolute http(s) endpoint. The CRD refuses most of this already; the
// reconciler checks again so that objects stored before a schema change are reported too.
func validateDefinition(def *platformv1.ModelProviderDefinition, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	endpoint := path.Child("endpoint")
	switch {
	case def.Endpoint == "" && def.Type != platformv1.DeterministicProvider:
		errs = append(errs, field.Required(endpoint, fmt.Sprintf("a %s provider needs an endpoint", def.Type)))
	case def.Endpoint != "":
		u, err := url.Parse(def.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, field.Invalid(endpoint, def.Endpoint, "must be an absolute http or https URL"))
		}
	}
	return errs
}

// setReadyCondition reports whether the provider can be used: a complete definition
// (InvalidDefinition) and a credential Secret that resolves for the provider's scope
// (SecretNotFound, UseNotGranted, InvalidScopeRef).
func setReadyCondition(s *scope) {
	condition := metav1.Condition{
		Type:               platformv1.ReadyCondition,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: s.provider.Generation,
	}
	switch {
	case len(s.invalid) > 0:
		condition.Reason = platformv1.InvalidDefinitionReason
		condition.Message = reconcileutil.FindingsMessage(s.invalid)
	case s.credentialRefusal != nil:
		condition.Reason = s.credentialRefusal.Reason
		condition.Message = s.credentialRefusal.Message
	default:
		condition.Status = metav1.ConditionTrue
		condition.Reason = platformv1.ResolvedReason
		condition.Message = readyMessage(&s.provider.Definition)
	}
	meta.SetStatusCondition(&s.provider.Status.Conditions, condition)
}

func readyMessage(def *platformv1.ModelProviderDefinition) string {
	msg := string(def.Type) + " provider"
	if def.Endpoint != "" {
		msg += " at " + def.Endpoint
	}
	if def.Credential != nil {
		msg += fmt.Sprintf(" with credential Secret %q", def.Credential.Name)
	}
	return msg + "; connectivity is not checked"
}
