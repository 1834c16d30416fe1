package sourceregistries

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// sharedFetch is one complete, verified fetch of an index and its shards (by name and digest),
// kept for the other registrations of its share key.
type sharedFetch struct {
	index  *IndexFetch
	shards map[string][]byte
	at     time.Time // the worker's evaluation that fetched it
	bytes  int
}

// ShareKey groups the registrations whose registry requests are the same: the index URL, the
// endpoint policy and the credential. Registrations that differ in any of these never share
// a fetch (a public registration never sees what a credential or a private address fetched).
func ShareKey(def platformv1.SourceRegistryDefinition) string {
	key := struct {
		URL            string                                `json:"u"`
		HTTP           bool                                  `json:"h"`
		PrivateNetwork bool                                  `json:"p"`
		Mode           platformv1.RegistryAuthenticationMode `json:"m"`
		Credential     *platformv1.SecretReference           `json:"c"`
	}{URL: def.IndexURL, Mode: platformv1.NoRegistryAuthentication}
	if def.AuthenticationMode == platformv1.StaticBearerRegistryAuthentication {
		key.Mode, key.Credential = def.AuthenticationMode, def.Credential
	}
	if p := def.EndpointPolicy; p != nil {
		key.HTTP, key.PrivateNetwork = p.AllowHTTP, p.AllowPrivateNetwork
	}
	b, _ := json.Marshal(key)
	return string(b)
}

// sharedFor is the fetch a scheduled refresh may reuse: one of its key, made in the same
// evaluation or the one before.
func (r *Refresher) sharedFor(share *Share) *sharedFetch {
	if share == nil || share.Key == "" || share.EvaluatedAt.IsZero() {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.shared[share.Key]
	if s == nil {
		return nil
	}
	if age := share.EvaluatedAt.Sub(s.at); age < 0 || age > share.Window+share.Window/2 {
		return nil
	}
	return s
}

// remember keeps s for the other registrations of share's key, within maxSharedBytes; what is
// older than two windows goes.
func (r *Refresher) remember(share *Share, s *sharedFetch) {
	if share == nil || share.Key == "" || share.EvaluatedAt.IsZero() || s == nil || s.index == nil {
		return
	}
	s.at = share.EvaluatedAt
	s.bytes = len(s.index.Document)
	for _, doc := range s.shards {
		s.bytes += len(doc)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shared == nil {
		r.shared = map[string]*sharedFetch{}
	}
	for key, old := range r.shared {
		if key == share.Key || share.EvaluatedAt.Sub(old.at) > 2*share.Window {
			r.sharedBytes -= old.bytes
			delete(r.shared, key)
		}
	}
	if r.sharedBytes+s.bytes > maxSharedBytes {
		return
	}
	r.shared[share.Key] = s
	r.sharedBytes += s.bytes
}

// shareOf is what a validated (304) current observation offers the other registrations.
func shareOf(current *Observation, shards map[string]Shard) *sharedFetch {
	idx := &IndexFetch{ETag: current.ETag, LastModified: current.LastModified, Serial: current.Serial, Digest: current.IndexDigest,
		Document: current.Index}
	s := &sharedFetch{index: idx, shards: map[string][]byte{}}
	for _, sh := range shards {
		idx.Shards = append(idx.Shards, ShardRef{Name: sh.Name, Digest: sh.Digest})
		s.shards[sh.Name+"\x00"+sh.Digest] = sh.Document
	}
	// The store keeps no shard order: by name, as it reads them.
	slices.SortFunc(idx.Shards, func(a, b ShardRef) int { return strings.Compare(a.Name, b.Name) })
	return s
}
