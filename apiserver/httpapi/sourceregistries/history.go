package sourceregistries

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/sourceregistries"
)

// cache is the registry cache and history, or 503 when the server runs without one.
func (r *routes) cache() (*domain.Store, error) {
	if c := r.Registries(); c != nil {
		return c, nil
	}
	return nil, huma.Error503ServiceUnavailable("this server runs without a Source registry cache")
}

func (r *routes) registerHistoryAndTrust() {
	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-source-registry-refreshes", Method: http.MethodGet, Path: "/api/sourceregistries/{name}/refreshes", Tags: []string{tagSourceRegistries},
		Summary:     "List a registration's refresh history",
		Description: "Durable, immutable records, newest first (trigger, outcome, duration, retry count, correlation id, digest, error code); take is at most 100.",
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *RefreshHistoryInput) (*httpapi.ListOutput[RefreshRecord], error) {
		reg, err := r.get(ctx, in.Name)
		if err != nil {
			return nil, err
		}
		c, err := r.cache()
		if err != nil {
			return nil, err
		}
		records, err := c.Refreshes(ctx, string(reg.UID), in.Skip, in.Take)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		items := make([]RefreshRecord, 0, len(records))
		for _, rec := range records {
			items = append(items, refreshRecordFrom(rec, reg.Name))
		}
		return httpapi.ItemsOutput(items), nil
	})

	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-source-registry-trust", Method: http.MethodGet, Path: "/api/sourceregistries/{name}/trust", Tags: []string{tagSourceRegistries},
		Summary:     "Read a registration's origin classification and local trust policy",
		Description: "Computed at the read from the registration as it is now; never a credential or a cached document.",
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *nameInput) (*struct{ Body RegistrationTrust }, error) {
		reg, err := r.get(ctx, in.Name)
		if err != nil {
			return nil, err
		}
		origin, reasons := domain.ClassifyOrigin(reg, r.Config())
		out := RegistrationTrust{
			RegistrationName: reg.Name, RegistrationUID: string(reg.UID), Origin: origin, OriginReasons: reasons,
			TrustPolicy: string(trustPolicyOf(reg)), Enabled: reg.Definition.Enabled == nil || *reg.Definition.Enabled,
			EvaluatedAt: time.Now().UTC(),
		}
		if c := r.Registries(); c != nil {
			st, err := c.State(ctx, string(reg.UID))
			if err != nil {
				return nil, httpapi.Problem(err)
			}
			if st.CurrentObservation != "" {
				out.ObservationID, out.IndexDigest = st.CurrentObservation, st.HighestDigest
			}
		}
		return &struct{ Body RegistrationTrust }{Body: out}, nil
	})
}

func refreshRecordFrom(rec domain.RefreshRecord, name string) RefreshRecord {
	return RefreshRecord{
		ID: rec.ID, RegistrationUID: rec.RegistrationUID, RegistrationName: name, Trigger: rec.Trigger, Outcome: rec.Outcome,
		StartedAt: rec.StartedAt, FinishedAt: rec.FinishedAt, DurationMs: rec.Duration().Milliseconds(), RetryCount: int32(rec.RetryCount),
		CorrelationID: rec.CorrelationID, Digest: rec.Digest, ObservationID: rec.ObservationID, ErrorCode: rec.ErrorCode,
	}
}
