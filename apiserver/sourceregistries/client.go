package sourceregistries

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/registry"
)

// ErrCredentialNotWired: a staticBearer registration, whose instance-scoped Secret the refresh
// does not resolve yet.
var ErrCredentialNotWired = &registry.Error{Code: registry.CodeCredentialUnavailable, Detail: "staticBearer registrations are not refreshed yet: the credential Secret is not resolved"}

// Fetchers makes each registration's fetcher from the instance's one registry pool, so every
// request keeps the guarded client's rules (origin, addresses, redirects, sizes, rate).
func Fetchers(pool *registry.Pool) func(context.Context, *platformv1.SourceRegistry) (Fetcher, error) {
	return func(_ context.Context, reg *platformv1.SourceRegistry) (Fetcher, error) {
		def := reg.Definition
		var endpoint registry.Endpoint
		if def.EndpointPolicy != nil {
			endpoint = registry.Endpoint{AllowHTTP: def.EndpointPolicy.AllowHTTP, AllowPrivateNetwork: def.EndpointPolicy.AllowPrivateNetwork}
		}
		opts := registry.Options{IndexURL: def.IndexURL, Endpoint: endpoint}
		if def.AuthenticationMode == platformv1.StaticBearerRegistryAuthentication {
			opts.Bearer = func(context.Context) (string, error) { return "", ErrCredentialNotWired }
		}
		c, err := pool.Client(opts)
		if err != nil {
			return nil, err
		}
		return &clientFetcher{c: c}, nil
	}
}

// ErrorCode is the stable code of a registry client error.
func ErrorCode(err error) string { return string(registry.CodeOf(err)) }

type clientFetcher struct {
	c        *registry.Client
	indexURL *url.URL
}

func (f *clientFetcher) FetchIndex(ctx context.Context, etag, lastModified string) (*IndexFetch, error) {
	got, err := f.c.FetchIndex(ctx, registry.Validators{ETag: etag, LastModified: lastModified})
	if err != nil {
		return nil, err
	}
	f.indexURL = got.URL
	out := &IndexFetch{NotModified: got.NotModified, ETag: got.Validators.ETag, LastModified: got.Validators.LastModified}
	if got.NotModified {
		return out, nil
	}
	// The index as read (bounded and checked by the reader), re-encoded for the cache.
	out.Serial, out.Digest = got.Index.Serial, got.Digest
	if out.Document, err = json.Marshal(got.Index); err != nil {
		return nil, err
	}
	for _, ref := range got.Index.Shards {
		out.Shards = append(out.Shards, ShardRef{Name: ref.Name, Location: ref.Location, Digest: ref.Digest})
	}
	return out, nil
}

func (f *clientFetcher) FetchShard(ctx context.Context, ref ShardRef) (*FetchedShard, error) {
	if f.indexURL == nil {
		return nil, errors.New("a shard is fetched after its index")
	}
	shard, _, err := f.c.FetchShard(ctx, f.indexURL, registry.ShardRef{Name: ref.Name, Location: ref.Location, Digest: ref.Digest})
	if err != nil {
		return nil, err
	}
	doc, err := json.Marshal(shard)
	if err != nil {
		return nil, err
	}
	var listings []Listing
	for _, src := range shard.Sources {
		for _, v := range src.Versions {
			listings = append(listings, Listing{Publisher: src.Publisher, Source: src.Name, Version: v.Version, ManifestDigest: v.ManifestDigest})
		}
	}
	return &FetchedShard{Document: doc, Listings: listings}, nil
}
