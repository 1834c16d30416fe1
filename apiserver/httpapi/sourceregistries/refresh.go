package sourceregistries

import (
	"context"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/sourceregistries"
)

func (r *routes) registerRefresh() {
	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "refresh-source-registry", Method: http.MethodPost, Path: "/api/sourceregistries/{name}/refresh", Tags: []string{tagSourceRegistries},
		Summary: "Refresh a registration's index now",
		Description: "One attempt, with the registration's timeout, serialized with any other refresh of the registration. " +
			"A failure is answered as a failed record (200) with its error code and keeps the last-known-good observation; " +
			"a 304 from the registry is notModified. A disabled registration is refused (409). " +
			"A refresh of the same registration that is already running (scheduled, or on another replica) is waited for up to 5 seconds, then answered 409.",
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *nameInput) (*struct{ Body RefreshRecord }, error) {
		reg, err := r.get(ctx, in.Name)
		if err != nil {
			return nil, err
		}
		if reg.Definition.Enabled != nil && !*reg.Definition.Enabled {
			return nil, huma.Error409Conflict("Source registry registration " + httpapi.Quote(in.Name) + " is disabled: enable it to refresh it")
		}
		rec, err := r.refresh(ctx, reg, domain.TriggerManual)
		if err != nil {
			return nil, err
		}
		return &struct{ Body RefreshRecord }{Body: refreshRecordFrom(rec, reg.Name)}, nil
	})
}

// refresh runs one refresh of reg and writes its result onto the SourceRegistry's status.
func (r *routes) refresh(ctx context.Context, reg *platformv1.SourceRegistry, trigger string) (domain.RefreshRecord, error) {
	refresher, fetchers := r.RegistryRefresher()
	if refresher == nil || fetchers == nil {
		return domain.RefreshRecord{}, huma.Error503ServiceUnavailable("this server runs without a Source registry client")
	}
	fetcher, err := fetchers(ctx, reg)
	if err != nil {
		return domain.RefreshRecord{}, httpapi.Problem(err)
	}
	rec, _, err := refresher.Run(ctx, domain.RefreshOf(reg, trigger, fetcher))
	if errors.Is(err, domain.ErrRefreshInProgress) {
		return rec, huma.Error409Conflict("a refresh of Source registry registration " + httpapi.Quote(reg.Name) +
			" is already running (a scheduled one, or one on another replica) and did not end within " + domain.ManualLockWait.String() +
			": its outcome will be in the refresh history; try again later")
	}
	if err != nil {
		return rec, httpapi.Problem(err)
	}
	return rec, httpapi.Problem(domain.WriteStatus(ctx, r.Kube(), r.Config(), r.Registries(), reg, rec))
}
