package sourceregistry

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/sourceregistries"
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

// setReadyCondition reports whether the registration is valid (InvalidDefinition), and then what
// its refreshes (which the service API and the periodic worker record on the status) say: False
// with RefreshFailed after a failed refresh (the last-known-good observation is still used),
// False with Stale once staleAfter passed since the last successful validation. It returns when
// a fresh registration turns stale, to be looked at again then (zero when it cannot). A
// registry's credential Secret (instance-scoped) is resolved by each refresh, not here. A valid,
// disabled registration is Ready with reason Disabled.
func setReadyCondition(s *scope) (staleAt time.Time) {
	status := &s.registry.Status
	gen := s.registry.Generation
	last := status.LastRefresh
	switch {
	case len(s.invalid) > 0:
		reconcileutil.SetReady(&status.ResourceStatus, gen, false, platformv1.InvalidDefinitionReason, reconcileutil.FindingsMessage(s.invalid))
	case s.registry.Definition.Enabled != nil && !*s.registry.Definition.Enabled:
		reconcileutil.SetReady(&status.ResourceStatus, gen, true, platformv1.DisabledReason, "the registration is valid; the registry is disabled and neither refreshed nor imported from")
	case last == nil:
		reconcileutil.SetReady(&status.ResourceStatus, gen, true, platformv1.ResolvedReason, "the registration of "+s.registry.Definition.IndexURL+" is valid; the index has not been fetched yet")
	case last.Outcome == platformv1.RefreshOutcome(sourceregistries.OutcomeFailed):
		kept := "no observation was ever cached"
		if status.CurrentObservationID != "" {
			kept = "the last-known-good observation is kept"
		}
		reconcileutil.SetReady(&status.ResourceStatus, gen, false, platformv1.RefreshFailedReason,
			fmt.Sprintf("the %s refresh at %s failed with %s; %s", last.Trigger, last.Time.UTC().Format(time.RFC3339), last.ErrorCode, kept))
	default:
		staleAfter := sourceregistries.PolicyOf(s.registry.Definition).StaleAfter
		if status.LastSuccessTime == nil {
			break
		}
		staleAt = status.LastSuccessTime.Add(staleAfter)
		if !s.now.Before(staleAt) {
			reconcileutil.SetReady(&status.ResourceStatus, gen, false, platformv1.StaleReason,
				fmt.Sprintf("the index was last validated at %s, longer ago than staleAfter (%s)", status.LastSuccessTime.UTC().Format(time.RFC3339), staleAfter))
			return time.Time{}
		}
		reconcileutil.SetReady(&status.ResourceStatus, gen, true, platformv1.ResolvedReason,
			"the index was validated at "+status.LastSuccessTime.UTC().Format(time.RFC3339))
	}
	return staleAt
}
