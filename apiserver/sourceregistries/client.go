package sourceregistries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"platform.dev/platform/apis/platform/ownerscope"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/registry"
)

// Credentials opens the value of a registration's credential: an instance-scoped Secret
// (secrets.Service.Value with the instance's namespace as the consumer's). The value is used for
// one request and never kept.
type Credentials func(ctx context.Context, ref platformv1.SecretReference) ([]byte, error)

// SecretCredentials opens credentials through value, the Secrets service's Value, as the
// instance (registrations belong to it), so only instance-scoped Secrets resolve.
func SecretCredentials(value func(ctx context.Context, consumerNamespace, field string, ref platformv1.SecretReference) ([]byte, error)) Credentials {
	return func(ctx context.Context, ref platformv1.SecretReference) ([]byte, error) {
		return value(ctx, ownerscope.InstanceNamespace, "definition.credential", ref)
	}
}

// Clients makes each registration's guarded client from the instance's one registry pool, so
// every request keeps its rules (origin, addresses, redirects, sizes, rate), with its staticBearer
// credential resolved for each request to the registration's origin, never another.
type Clients struct {
	Pool *registry.Pool
	// Credentials opens credential Secrets; without it a staticBearer registration's requests
	// fail with RegistryCredentialUnavailable.
	Credentials Credentials
}

// errNoCredentials: a staticBearer registration on a server without Credentials.
var errNoCredentials = errors.New("this server resolves no registry credentials")

// Client is the guarded client of reg.
func (c *Clients) Client(_ context.Context, reg *platformv1.SourceRegistry) (*registry.Client, error) {
	def := reg.Definition
	var endpoint registry.Endpoint
	if def.EndpointPolicy != nil {
		endpoint = registry.Endpoint{AllowHTTP: def.EndpointPolicy.AllowHTTP, AllowPrivateNetwork: def.EndpointPolicy.AllowPrivateNetwork}
	}
	opts := registry.Options{IndexURL: def.IndexURL, Endpoint: endpoint}
	if def.AuthenticationMode == platformv1.StaticBearerRegistryAuthentication {
		opts.Bearer = c.bearer(def.Credential)
	}
	return c.Pool.Client(opts)
}

// bearer resolves ref at every request (a changed or removed Secret takes effect at once). Its
// errors name the Secret, never a value.
func (c *Clients) bearer(ref *platformv1.SecretReference) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		if ref == nil {
			return "", errors.New("staticBearer names no credential Secret")
		}
		if c.Credentials == nil {
			return "", errNoCredentials
		}
		value, err := c.Credentials(ctx, *ref)
		if err != nil {
			return "", err
		}
		token := strings.TrimSpace(string(value))
		if token == "" || strings.ContainsFunc(token, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
			// Said without the value: it is no header value.
			return "", fmt.Errorf("Secret %q holds no usable bearer token (empty, or spaces or control characters inside)", ref.Name)
		}
		return token, nil
	}
}

// Fetcher is the refresh's fetcher of reg.
func (c *Clients) Fetcher(ctx context.Context, reg *platformv1.SourceRegistry) (Fetcher, error) {
	client, err := c.Client(ctx, reg)
	if err != nil {
		return nil, err
	}
	return &clientFetcher{c: client}, nil
}

// Fetchers makes each registration's fetcher from pool, without credentials (a staticBearer
// registration fails with RegistryCredentialUnavailable): Clients with Credentials resolves them.
func Fetchers(pool *registry.Pool) func(context.Context, *platformv1.SourceRegistry) (Fetcher, error) {
	return (&Clients{Pool: pool}).Fetcher
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
