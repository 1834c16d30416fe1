package identity

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// maxCachedCallers bounds the resolutions a Service keeps (tokens, sessions, accesses, default
// workspaces); beyond it the cache starts over, which costs a miss each, never a wrong answer.
const maxCachedCallers = 8192

// What a request resolves of its caller (its token or session, its rights in a workspace) costs
// up to nine statements, and is the same from one request to the next until an administrator
// changes something. A Service keeps those resolutions in memory under the identity generation:
// a counter in the store that every such change bumps in its own transaction, by trigger, so
// that a change made by any replica, or by hand in SQL, is seen by the next request everywhere
// (the migration 00187 lists what bumps it). A request reads the counter once (Snapshot); an
// answer resolved under an older generation is never used.
//
// The counter is read before what it guards: a resolution read after a change but tagged with
// the generation before it is only ever thrown away early, never kept late.

// resolutions are the resolutions of one generation.
type resolutions struct {
	mu         sync.Mutex
	generation int64
	entries    map[string]any
}

// get is the resolution of key under generation, if it was made under it.
func (c *resolutions) get(generation int64, key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if generation != c.generation {
		c.advance(generation)
		return nil, false
	}
	v, ok := c.entries[key]
	return v, ok
}

// put keeps the resolution of key made under generation, unless a newer generation was seen.
func (c *resolutions) put(generation int64, key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advance(generation)
	if generation != c.generation {
		return
	}
	if c.entries == nil || len(c.entries) >= maxCachedCallers {
		c.entries = make(map[string]any, 64)
	}
	c.entries[key] = v
}

// advance forgets every resolution when generation is newer than the cache's; the lock is held.
func (c *resolutions) advance(generation int64) {
	if generation > c.generation {
		c.generation, c.entries = generation, nil
	}
}

type generationKey struct{}

// Snapshot reads the identity generation once for the rest of a request: the resolutions that
// ctx's calls make or reuse are those of the store as it was at this read, or later. A request
// that does not take one reads the generation at each call that resolves.
func (s *Service) Snapshot(ctx context.Context) (context.Context, error) {
	generation, err := s.readGeneration(ctx)
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, generationKey{}, generation), nil
}

// generation is the generation of ctx's Snapshot, or the store's now.
func (s *Service) generation(ctx context.Context) (int64, error) {
	if generation, ok := ctx.Value(generationKey{}).(int64); ok {
		return generation, nil
	}
	return s.readGeneration(ctx)
}

func (s *Service) readGeneration(ctx context.Context) (int64, error) {
	var generation int64
	if err := s.Store.DB().QueryRowContext(ctx, `SELECT generation FROM identity_generation WHERE singleton = 1`).Scan(&generation); err != nil {
		return 0, fmt.Errorf("read the identity generation: %w", err)
	}
	return generation, nil
}

// Keys of the cached resolutions, by kind; the token kinds hold digests, never tokens.
const (
	cachedPAT              = "pat\x00"
	cachedSessionKey       = "session\x00"
	cachedAccess           = "access\x00"
	cachedDefaultWorkspace = "default\x00"
	cachedAdministrator    = "admin\x00"
)

// cachedSession is a valid session as Authenticate resolved it; it ends at expiresAt whatever
// the generation.
type cachedSession struct {
	principal           Principal
	expiresAt, lastSeen time.Time
}
