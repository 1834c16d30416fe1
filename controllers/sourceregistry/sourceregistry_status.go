package sourceregistry

import (
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// validateDefinition checks the registration without the network: indexUrl is an absolute URL
// without credentials, query, fragment or percent-encoding, https unless endpointPolicy.allowHttp,
// and staticBearer names a credential. The CRD refuses most of this already; the reconciler
// checks again so that objects stored before a schema change are reported too.
func validateDefinition(def *platformv1.SourceRegistryDefinition, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	indexURL := path.Child("indexUrl")
	u, err := url.Parse(def.IndexURL)
	allowHTTP := def.EndpointPolicy != nil && def.EndpointPolicy.AllowHTTP
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		errs = append(errs, field.Invalid(indexURL, def.IndexURL, "must be an absolute http or https URL"))
	case strings.ContainsAny(def.IndexURL, "@?#%"):
		errs = append(errs, field.Invalid(indexURL, def.IndexURL, "must have no credentials, query, fragment or percent-encoding"))
	case u.Scheme == "http" && !allowHTTP:
		errs = append(errs, field.Invalid(indexURL, def.IndexURL, "must be https unless endpointPolicy.allowHttp is true"))
	}
	if def.AuthenticationMode == platformv1.StaticBearerRegistryAuthentication && def.Credential == nil {
		errs = append(errs, field.Required(path.Child("credential"), "staticBearer authentication needs an instance-scoped credential Secret"))
	}
	return errs
}

// setReadyCondition reports whether the registration is valid (InvalidDefinition). Ready says
// only that: the index is fetched by the refresh service, whose outcome is status.lastRefresh,
// and a registry's credential Secret (instance-scoped) is not resolved because the instance scope
// has no namespace yet. A valid, disabled registration is Ready with reason Disabled.
func setReadyCondition(s *scope) {
	status := &s.registry.Status.ResourceStatus
	gen := s.registry.Generation
	switch {
	case len(s.invalid) > 0:
		reconcileutil.SetReady(status, gen, false, platformv1.InvalidDefinitionReason, reconcileutil.FindingsMessage(s.invalid))
	case s.registry.Definition.Enabled != nil && !*s.registry.Definition.Enabled:
		reconcileutil.SetReady(status, gen, true, platformv1.DisabledReason, "the registration is valid; the registry is disabled and neither refreshed nor imported from")
	default:
		message := "the registration of " + s.registry.Definition.IndexURL + " is valid"
		if s.registry.Status.LastSuccessTime == nil && s.registry.Status.CurrentObservationID == "" {
			// Only until a refresh succeeded: afterwards this would contradict status.lastRefresh.
			message += "; the index has not been fetched yet"
		}
		reconcileutil.SetReady(status, gen, true, platformv1.ResolvedReason, message)
	}
}
