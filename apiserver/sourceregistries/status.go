package sourceregistries

import (
	"context"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/config"
)

// RefreshOf is the refresh of reg with its refresh and cache policies, through fetcher.
func RefreshOf(reg *platformv1.SourceRegistry, trigger string, fetcher Fetcher) Refresh {
	retain := DefaultRetainedObservations
	if c := reg.Definition.CachePolicy; c != nil && c.RetainedObservations != nil {
		retain = int(*c.RetainedObservations)
	}
	return Refresh{RegistrationUID: string(reg.UID), IndexURL: reg.Definition.IndexURL, Trigger: trigger,
		Policy: PolicyOf(reg.Definition), Retain: retain, CorrelationID: uuid.NewString(), Fetcher: fetcher}
}

// Enabled is whether reg may be refreshed and imported from (true when omitted).
func Enabled(reg *platformv1.SourceRegistry) bool {
	return reg.Definition.Enabled == nil || *reg.Definition.Enabled
}

// WriteStatus records the latest refresh and the registration's state on the kind, so kubectl
// shows it too.
func WriteStatus(ctx context.Context, kube client.Client, cfg *config.Config, cache *Store, reg *platformv1.SourceRegistry, rec RefreshRecord) error {
	st, err := cache.State(ctx, string(reg.UID))
	if err != nil {
		return err
	}
	if cfg == nil {
		cfg = config.FromMap(config.Production, nil)
	}
	origin, _ := ClassifyOrigin(reg, cfg)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &platformv1.SourceRegistry{}
		if err := kube.Get(ctx, client.ObjectKey{Name: reg.Name}, cur); err != nil {
			return err
		}
		if cur.UID != reg.UID {
			return nil // deleted and created again meanwhile: not this registration's refresh
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
		return kube.Status().Update(ctx, cur)
	})
}
