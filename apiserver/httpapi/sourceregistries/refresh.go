package sourceregistries

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
			"a 304 from the registry is notModified. A disabled registration is refused (409).",
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
	policy := domain.PolicyOf(reg.Definition)
	retain := domain.DefaultRetainedObservations
	if c := reg.Definition.CachePolicy; c != nil && c.RetainedObservations != nil {
		retain = int(*c.RetainedObservations)
	}
	rec, _, err := refresher.Run(ctx, domain.Refresh{
		RegistrationUID: string(reg.UID), IndexURL: reg.Definition.IndexURL, Trigger: trigger, Policy: policy, Retain: retain,
		CorrelationID: uuid.NewString(), Fetcher: fetcher,
	})
	if err != nil {
		return rec, httpapi.Problem(err)
	}
	return rec, httpapi.Problem(r.writeStatus(ctx, reg, rec))
}

// writeStatus records the latest refresh on the kind, so kubectl shows it too.
func (r *routes) writeStatus(ctx context.Context, reg *platformv1.SourceRegistry, rec domain.RefreshRecord) error {
	cache := r.Registries()
	st, err := cache.State(ctx, string(reg.UID))
	if err != nil {
		return err
	}
	origin, _ := domain.ClassifyOrigin(reg, r.Config())
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &platformv1.SourceRegistry{}
		if err := r.Kube().Get(ctx, client.ObjectKey{Name: reg.Name}, cur); err != nil {
			return err
		}
		cur.Status.Origin = platformv1.OriginClassification(origin)
		cur.Status.LastRefresh = &platformv1.RefreshSummary{Time: metav1.NewTime(rec.FinishedAt), Trigger: platformv1.RefreshTrigger(rec.Trigger),
			Outcome: platformv1.RefreshOutcome(rec.Outcome), ErrorCode: rec.ErrorCode, Digest: platformv1.Digest(rec.Digest)}
		cur.Status.ConsecutiveFailures = int32(st.ConsecutiveFailures)
		cur.Status.CurrentObservationID = st.CurrentObservation
		if !st.LastSuccessAt.IsZero() {
			t := metav1.NewTime(st.LastSuccessAt)
			cur.Status.LastSuccessTime = &t
		}
		return r.Kube().Status().Update(ctx, cur)
	})
}
