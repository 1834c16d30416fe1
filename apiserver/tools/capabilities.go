package tools

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

const (
	// DefaultCapabilityLifetime is how long after its call began a capability may be redeemed.
	DefaultCapabilityLifetime = time.Minute
	// maxCapabilities bounds the outstanding capabilities of the process; a call that would
	// need more is refused as an outage (retried), never by dropping others.
	maxCapabilities = 4096
	// capabilityPrefix marks a capability, so that a leaked one is recognizable.
	capabilityPrefix = "aepcap_"
	// redeemTimeout bounds loading the provider, the Secret and its Vault for one redemption.
	redeemTimeout = 10 * time.Second
)

// ErrCapabilityRefused: a capability that is unknown, already redeemed, ended with its call,
// expired, presented for another scope, or whose Secret the consumer scope may no longer use.
// Its message says which, never the value.
var ErrCapabilityRefused = errors.New("the capability is refused")

// capability is what the platform keeps of one issued capability: only the hash of the token,
// and the exact consumer scope with the binding it was issued under.
type capability struct {
	namespace string
	provider  string
	uid       types.UID
	role      string
	secret    platformv1.SecretReference
	expires   time.Time
}

// capabilities are the outstanding capabilities, by the SHA-256 of their token. A token is 32
// random bytes; a hash is enough to find it, and a dump of the process's memory holds no usable
// one.
type capabilities struct {
	mu    sync.Mutex
	byKey map[[sha256.Size]byte]capability
}

func newCapabilities() *capabilities {
	return &capabilities{byKey: map[[sha256.Size]byte]capability{}}
}

// issue stores c and returns its token and key (to revoke it).
func (cs *capabilities) issue(c capability) (string, [sha256.Size]byte, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", [sha256.Size]byte{}, err
	}
	token := capabilityPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	key := sha256.Sum256([]byte(token))
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.byKey) >= maxCapabilities {
		now := time.Now()
		for k, v := range cs.byKey {
			if now.After(v.expires) {
				delete(cs.byKey, k)
			}
		}
		if len(cs.byKey) >= maxCapabilities {
			return "", key, fmt.Errorf("%d Secret capabilities are outstanding, the most at once", maxCapabilities)
		}
	}
	cs.byKey[key] = c
	return token, key, nil
}

// revoke ends capabilities whether or not they were redeemed.
func (cs *capabilities) revoke(keys ...[sha256.Size]byte) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, k := range keys {
		delete(cs.byKey, k)
	}
}

// take removes and returns the capability of token: whatever happens next, it is used.
func (cs *capabilities) take(token string) (capability, bool) {
	key := sha256.Sum256([]byte(token))
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c, ok := cs.byKey[key]
	delete(cs.byKey, key)
	return c, ok
}

// Redeem opens the Secret a capability names, for an extension that presents it with the scope
// of its call. A capability is used once: the first redemption consumes it, whatever its
// outcome. It is refused (ErrCapabilityRefused) when unknown, already redeemed, ended with its
// call, expired, or presented for another scope. Then, in an internal context bounded by
// redeemTimeout that carries nothing of the caller, the provider is loaded again and must be the
// same object still binding the role to the same Secret, and the Secret is resolved for the
// retained consumer scope with the one Resolver (scopes and grants evaluated now, not when the
// capability was issued) and read from its Vault. The extension gains no right to read any
// resource; the value is returned once and never logged.
func (m *Manager) Redeem(ctx context.Context, token, scope string) (role, value string, err error) {
	if !strings.HasPrefix(token, capabilityPrefix) || len(token) > 128 {
		return "", "", fmt.Errorf("%w: it is not a capability", ErrCapabilityRefused)
	}
	c, ok := m.capabilities.take(token)
	switch {
	case !ok:
		return "", "", fmt.Errorf("%w: it is unknown, was already redeemed, or ended with its call", ErrCapabilityRefused)
	case time.Now().After(c.expires):
		return "", "", fmt.Errorf("%w: it expired", ErrCapabilityRefused)
	case scope != c.namespace:
		m.opts.Log.Info("capability presented for another scope refused", "namespace", c.namespace, "toolProvider", c.provider, "role", c.role)
		return "", "", fmt.Errorf("%w: it was issued for another scope", ErrCapabilityRefused)
	}
	internal, cancel := context.WithTimeout(context.WithoutCancel(ctx), redeemTimeout)
	defer cancel()
	p, err := m.provider(internal, c.namespace, c.provider)
	if apierrors.IsNotFound(err) || (err == nil && p.UID != c.uid) {
		return "", "", fmt.Errorf("%w: its tool provider no longer exists", ErrCapabilityRefused)
	}
	if err != nil {
		return "", "", err
	}
	index, bound := -1, false
	if p.Definition.Extension != nil {
		for i, b := range p.Definition.Extension.Secrets {
			if b.Role == c.role {
				index, bound = i, equality.Semantic.DeepEqual(b.Secret, c.secret)
			}
		}
	}
	if !bound {
		return "", "", fmt.Errorf("%w: the tool provider no longer binds role %q to that Secret", ErrCapabilityRefused, c.role)
	}
	path := field.NewPath("definition", "extension", "secrets").Index(index).Child("secret").String()
	value, err = m.opts.Secrets(internal, c.namespace, path, c.secret)
	if err != nil {
		// The Resolver's and the Vault's messages name references and reasons, never values.
		return "", "", fmt.Errorf("%w: %s", ErrCapabilityRefused, err.Error())
	}
	m.opts.Log.Info("extension capability redeemed", "namespace", c.namespace, "toolProvider", c.provider, "role", c.role)
	return c.role, value, nil
}
