package sourceregistries

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/sourceregistries"
)

func (r *routes) registerDiscovery() {
	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "discover-sources", Method: http.MethodGet, Path: "/api/sourceregistries/discovery", Tags: []string{tagSourceRegistries},
		Summary: "Search the cached registry observations",
		Description: "Reads the current observation of every enabled registration from the cache only: no network request. " +
			"Grouped by publisher/Source, then by opaque version in the registry's order; equal observations of several registrations " +
			"stay separate; differing digests are a conflict; isCatalogLatest is per observation and no global latest is invented.",
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *DiscoveryInput) (*struct{ Body DiscoveryPage }, error) {
		entries, err := r.entries(ctx)
		if err != nil {
			return nil, err
		}
		var matched []Observation
		for _, e := range entries {
			if in.matches(e) {
				matched = append(matched, observationFrom(e))
			}
		}
		page := DiscoveryPage{Items: []Observation{}, Total: len(matched)}
		if in.Skip < len(matched) {
			page.Items = matched[in.Skip:min(len(matched), in.Skip+in.Take)]
		}
		return &struct{ Body DiscoveryPage }{Body: page}, nil
	})

	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-discovered-publishers", Method: http.MethodGet, Path: "/api/sourceregistries/discovery/publishers", Tags: []string{tagSourceRegistries},
		Summary: "List the publishers of the cached observations", Description: "From the cache only; the accepted status is the strongest any registration's policy accepts, a revocation dominating.",
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *PublishersInput) (*httpapi.ListOutput[PublisherSummary], error) {
		entries, err := r.entries(ctx)
		if err != nil {
			return nil, err
		}
		byName := map[string]*PublisherSummary{}
		sources := map[string]map[string]bool{}
		var names []string
		for _, e := range entries {
			p, ok := byName[e.Publisher]
			if !ok {
				p = &PublisherSummary{Publisher: e.Publisher, PublisherStatus: domain.PublisherNone, Registrations: []string{}}
				byName[e.Publisher], sources[e.Publisher] = p, map[string]bool{}
				names = append(names, e.Publisher)
			}
			sources[e.Publisher][e.SourceName] = true
			p.Sources = len(sources[e.Publisher])
			if !slices.Contains(p.Registrations, e.RegistrationName) {
				p.Registrations = append(p.Registrations, e.RegistrationName)
			}
			p.PublisherStatus = strongerStatus(p.PublisherStatus, e.PublisherStatus)
		}
		sort.Strings(names)
		out := []PublisherSummary{}
		for i, n := range names {
			if i >= in.Skip && len(out) < in.Take {
				out = append(out, *byName[n])
			}
		}
		return httpapi.ItemsOutput(out), nil
	})

	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-discovered-source", Method: http.MethodGet, Path: "/api/sourceregistries/discovery/sources/{publisher}/{source}", Tags: []string{tagSourceRegistries},
		Summary: "Read one exact Source's cached observations", Description: "Every observation of each opaque version, from the cache only; 404 when no registration lists it.",
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *SourceInput) (*struct{ Body SourceDetail }, error) {
		entries, err := r.entries(ctx)
		if err != nil {
			return nil, err
		}
		detail := SourceDetail{Publisher: in.Publisher, SourceName: in.Source, Observations: []Observation{}}
		for _, e := range entries {
			if e.Publisher == in.Publisher && e.SourceName == in.Source {
				detail.Observations = append(detail.Observations, observationFrom(e))
			}
		}
		if len(detail.Observations) == 0 {
			return nil, huma.Error404NotFound("no registration lists the Source " + httpapi.Quote(in.Publisher+"/"+in.Source))
		}
		return &struct{ Body SourceDetail }{Body: detail}, nil
	})
}

// entries are the cached observations of every registration, grouped by publisher/Source then
// by opaque version in the order the registries list them (never sorted as versions).
func (r *routes) entries(ctx context.Context) ([]domain.Entry, error) {
	c, err := r.cache()
	if err != nil {
		return nil, err
	}
	var list platformv1.SourceRegistryList
	if err := r.Kube().List(ctx, &list); err != nil {
		return nil, httpapi.Problem(err)
	}
	entries, err := c.Entries(ctx, list.Items, r.Config(), time.Now())
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	type key struct{ p, s string }
	versionRank := map[key]map[string]int{}
	for _, e := range entries {
		k := key{e.Publisher, e.SourceName}
		if versionRank[k] == nil {
			versionRank[k] = map[string]int{}
		}
		if _, ok := versionRank[k][e.Version]; !ok {
			versionRank[k][e.Version] = len(versionRank[k])
		}
	}
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.Publisher != b.Publisher {
			return a.Publisher < b.Publisher
		}
		if a.SourceName != b.SourceName {
			return a.SourceName < b.SourceName
		}
		return versionRank[key{a.Publisher, a.SourceName}][a.Version] < versionRank[key{b.Publisher, b.SourceName}][b.Version]
	})
	return entries, nil
}

func (in *DiscoveryInput) matches(e domain.Entry) bool {
	if in.Search != "" {
		q := strings.ToLower(in.Search)
		if !strings.Contains(strings.ToLower(e.Publisher+"\x00"+e.SourceName+"\x00"+e.DisplayName+"\x00"+e.Description), q) {
			return false
		}
	}
	return (in.Publisher == "" || e.Publisher == in.Publisher) &&
		(in.Registry == "" || e.RegistrationName == in.Registry) &&
		(!in.CompatibleOnly || e.Compatible) &&
		(!in.FreshOnly || !e.Stale) &&
		(!in.ConflictsOnly || e.Conflict) &&
		(in.TrustPolicy == "" || e.TrustPolicy == in.TrustPolicy) &&
		(in.PublisherStatus == "" || e.PublisherStatus == in.PublisherStatus) &&
		(in.VerificationStatus == "" || e.Verification == in.VerificationStatus)
}

var statusRank = map[string]int{domain.PublisherNone: 0, "Declared": 1, "Verified": 2, "Official": 3, "Revoked": 4}

// strongerStatus: an accepted revocation dominates, then official, verified, declared.
func strongerStatus(a, b string) string {
	if statusRank[b] > statusRank[a] {
		return b
	}
	return a
}

func observationFrom(e domain.Entry) Observation {
	freshness := "fresh"
	if e.Stale {
		freshness = "stale"
	}
	return Observation{
		RegistrationName: e.RegistrationName, RegistrationUID: e.RegistrationUID, ObservationID: e.ObservationID, IndexDigest: e.IndexDigest,
		CatalogName: e.CatalogName, Publisher: e.Publisher, SourceName: e.SourceName, Version: e.Version, ManifestDigest: e.ManifestDigest,
		IsCatalogLatest: e.IsCatalogLatest, DisplayName: e.DisplayName, Description: e.Description, Compatible: e.Compatible,
		Freshness: freshness, Stale: e.Stale, TrustPolicy: e.TrustPolicy, Origin: e.Origin,
		AssertedPublisherStatus: e.AssertedPublisherStatus, PublisherStatus: e.PublisherStatus, VerificationStatus: e.Verification, Conflict: e.Conflict,
	}
}

func (r *routes) registerVersionTrust() {
	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-source-version-trust", Method: http.MethodGet, Path: "/api/sourceregistries/trust/sources/{publisher}/{source}/versions/{version}", Tags: []string{tagSourceRegistries},
		Summary: "Read the publisher and exact-version evidence of a Source version",
		Description: "Evaluated at the read over every registration's cached observation: the accepted publisher status (a revocation dominates), " +
			"SourceVersion verification of this exact manifest digest (differing digests are a conflict) and the first digest seen. " +
			"Snapshot verification is not evaluated until a Channel is materialized. Never a credential or a cached document.",
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *VersionTrustInput) (*struct{ Body VersionTrust }, error) {
		entries, err := r.entries(ctx)
		if err != nil {
			return nil, err
		}
		out, err := r.versionTrust(ctx, entries, in.Publisher, in.Source, in.Version, in.ManifestDigest)
		if err != nil {
			return nil, err
		}
		return &struct{ Body VersionTrust }{Body: out}, nil
	})
}

// versionTrust is the publisher and exact-version evidence of publisher/source/version with
// manifestDigest over entries, evaluated now: the route's answer and an import's trust snapshot.
func (r *routes) versionTrust(ctx context.Context, entries []domain.Entry, publisher, source, version, manifestDigest string) (VersionTrust, error) {
	out := VersionTrust{Publisher: publisher, SourceName: source, Version: version, ManifestDigest: manifestDigest,
		PublisherState: domain.PublisherNone, Verification: domain.VerificationUnverified, Snapshot: "NotEvaluated", Evidence: []Evidence{}, EvaluatedAt: time.Now().UTC()}
	for _, e := range entries {
		if e.Publisher == publisher {
			out.PublisherState = strongerStatus(out.PublisherState, e.PublisherStatus)
		}
		if e.Publisher != publisher || e.SourceName != source || e.Version != version {
			continue
		}
		reasons := []string{}
		if e.AssertedPublisherStatus != e.PublisherStatus {
			reasons = append(reasons, "publisherStatusLimitedByPolicy")
		}
		if e.ManifestDigest != manifestDigest {
			reasons = append(reasons, "manifestDigestDiffers")
		}
		if e.Conflict {
			reasons = append(reasons, "digestConflict")
			out.Verification = domain.VerificationConflict
		} else if e.ManifestDigest == manifestDigest && e.Verification == domain.VerificationVerified && out.Verification != domain.VerificationConflict {
			out.Verification = domain.VerificationVerified
		}
		out.Evidence = append(out.Evidence, Evidence{RegistrationName: e.RegistrationName, RegistrationUID: e.RegistrationUID, ObservationID: e.ObservationID,
			IndexDigest: e.IndexDigest, CatalogName: e.CatalogName, CatalogDigest: e.CatalogDigest, TrustPolicy: e.TrustPolicy, Origin: e.Origin, ManifestDigest: e.ManifestDigest,
			AssertedPublisherStatus: e.AssertedPublisherStatus, AcceptedPublisherStatus: e.PublisherStatus, ReasonCodes: reasons})
	}
	if out.PublisherState == "Revoked" && out.Verification == domain.VerificationVerified {
		out.Verification = domain.VerificationUnverified
	}
	if c := r.Registries(); c != nil {
		if f, ok, err := c.FirstSeenOf(ctx, publisher, source, version); err != nil {
			return out, httpapi.Problem(err)
		} else if ok {
			out.FirstSeen = &FirstSeen{ManifestDigest: f.ManifestDigest, RegistrationUID: f.RegistrationUID, ObservationID: f.ObservationID, FirstSeenAt: f.At}
		}
	}
	return out, nil
}
