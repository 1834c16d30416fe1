package sourceregistries

import (
	"context"
	"encoding/json"
	"time"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/config"
	"platform.dev/platform/internal/registry"
)

// Accepted publisher statuses and SourceVersion verification states.
const (
	PublisherNone          = "None"
	VerificationVerified   = "Verified"
	VerificationUnverified = "Unverified"
	VerificationConflict   = "Conflict"
)

// Entry is one observation of one opaque version by one registration's current observation,
// with its trust evaluated now.
type Entry struct {
	RegistrationName, RegistrationUID, ObservationID, IndexDigest, CatalogName  string
	CatalogDigest                                                               string
	Publisher, SourceName, Version, ManifestDigest                              string
	DisplayName, Description                                                    string
	IsCatalogLatest, Compatible, Stale, Conflict                                bool
	TrustPolicy, Origin, AssertedPublisherStatus, PublisherStatus, Verification string
}

// AcceptedPublisherStatus is what a registration's policy accepts of an asserted status:
// untrusted contributes declared evidence only; trusted may verify (and revoke); only
// authoritative may contribute official.
func AcceptedPublisherStatus(policy platformv1.TrustPolicy, asserted registry.PublisherStatus) string {
	switch {
	case asserted == registry.Declared:
		return string(registry.Declared)
	case policy == platformv1.UntrustedPolicy || policy == "":
		return string(registry.Declared)
	case asserted == registry.Official && policy != platformv1.AuthoritativePolicy:
		return string(registry.Verified)
	}
	return string(asserted)
}

// Entries reads the current observation of every enabled registration from the cache (never the
// network) and evaluates each listed version's trust at this read.
func (s *Store) Entries(ctx context.Context, regs []platformv1.SourceRegistry, cfg *config.Config, now time.Time) ([]Entry, error) {
	var out []Entry
	for i := range regs {
		reg := &regs[i]
		if reg.Definition.Enabled != nil && !*reg.Definition.Enabled {
			continue
		}
		st, err := s.State(ctx, string(reg.UID))
		if err != nil {
			return nil, err
		}
		if st.CurrentObservation == "" {
			continue
		}
		obs, ok, err := s.ObservationByID(ctx, st.CurrentObservation)
		if err != nil || !ok {
			return nil, err
		}
		shards, err := s.Shards(ctx, obs.ID)
		if err != nil {
			return nil, err
		}
		policy := reg.Definition.TrustPolicy
		if policy == "" {
			policy = platformv1.UntrustedPolicy
		}
		origin, _ := ClassifyOrigin(reg, cfg)
		stale := now.Sub(st.LastSuccessAt) > PolicyOf(reg.Definition).StaleAfter
		for _, sh := range shards {
			var doc registry.Shard
			if err := json.Unmarshal(sh.Document, &doc); err != nil {
				continue
			}
			statuses := map[string]registry.PublisherStatus{}
			for _, p := range doc.Publishers {
				statuses[p.Name] = p.Status
			}
			for _, src := range doc.Sources {
				for _, v := range src.Versions {
					asserted := statuses[src.Publisher]
					e := Entry{RegistrationName: reg.Name, RegistrationUID: string(reg.UID), ObservationID: obs.ID, IndexDigest: obs.IndexDigest,
						CatalogName: sh.Name, CatalogDigest: sh.Digest, Publisher: src.Publisher, SourceName: src.Name, Version: v.Version, ManifestDigest: v.ManifestDigest,
						DisplayName: src.DisplayName, Description: src.Description, IsCatalogLatest: v.IsCatalogLatest, Compatible: v.Compatibility.Compatible(),
						Stale: stale, TrustPolicy: string(policy), Origin: origin, AssertedPublisherStatus: string(asserted),
						PublisherStatus: AcceptedPublisherStatus(policy, asserted)}
					if e.AssertedPublisherStatus == "" {
						e.AssertedPublisherStatus, e.PublisherStatus = PublisherNone, PublisherNone
					}
					out = append(out, e)
				}
			}
		}
	}
	return out, s.evaluateVersions(ctx, out)
}

// evaluateVersions sets Conflict and Verification: different digests for one identity and
// version (among the observations, or against the first one seen) are a blocking conflict; a
// version is verified when a trusted or authoritative registration lists it with its first-seen
// digest and its publisher is not revoked.
func (s *Store) evaluateVersions(ctx context.Context, entries []Entry) error {
	type key struct{ p, s, v string }
	digests := map[key]map[string]bool{}
	for _, e := range entries {
		k := key{e.Publisher, e.SourceName, e.Version}
		if digests[k] == nil {
			digests[k] = map[string]bool{}
			if f, ok, err := s.FirstSeenOf(ctx, e.Publisher, e.SourceName, e.Version); err != nil {
				return err
			} else if ok {
				digests[k][f.ManifestDigest] = true
			}
		}
		digests[k][e.ManifestDigest] = true
	}
	for i := range entries {
		e := &entries[i]
		e.Conflict = len(digests[key{e.Publisher, e.SourceName, e.Version}]) > 1
		switch {
		case e.Conflict:
			e.Verification = VerificationConflict
		case e.TrustPolicy != string(platformv1.UntrustedPolicy) && e.PublisherStatus != string(registry.Revoked):
			e.Verification = VerificationVerified
		default:
			e.Verification = VerificationUnverified
		}
	}
	return nil
}
