package secrets

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/ownerscope"
	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Service is what the service API, the controllers and the model providers use of Secrets: the
// write-only value operations, the state of Vaults and Secrets, and Value, the one way a value
// leaves the Vault, always through the Resolver.
type Service struct {
	Resolver *Resolver
	// Vault is the Local Vault; nil in a controller manager that runs without the SQL store of
	// `platform serve`, where every Vault reports that it cannot be seen.
	Vault *LocalVault
}

// detached is the availability of every Vault without a Local Vault to ask.
var detached = Availability{Reason: platformv1.VaultUnavailableReason,
	Message: "this controller manager runs without the SQL store of platform serve, so it cannot see the Local Vault"}

// ErrNotLocal refuses values for a Vault whose provider is not Local (the only provider).
var ErrNotLocal = errors.New("the Vault's provider is not Local, the only provider that stores values")

// SetValue writes value into the Vault entry of secret, replacing what it held. Nothing is stored
// when the value is empty or too large, the Secret's Vault does not resolve (a *Refusal), or the
// Vault is unavailable (an *UnavailableError).
func (s *Service) SetValue(ctx context.Context, secret *platformv1.Secret, value []byte) error {
	if err := CheckValue(value); err != nil {
		return err
	}
	if s.Vault == nil {
		return &UnavailableError{Availability: detached}
	}
	res, err := s.vaultOf(ctx, secret)
	if err != nil {
		return err
	}
	return s.Vault.Put(ctx, res.Entry(), value)
}

// DeleteValue removes the value of secret from its Vault; false when there was none.
func (s *Service) DeleteValue(ctx context.Context, secret *platformv1.Secret) (bool, error) {
	if s.Vault == nil {
		return false, &UnavailableError{Availability: detached}
	}
	res, err := s.vaultOf(ctx, secret)
	if err != nil {
		return false, err
	}
	return s.Vault.Delete(ctx, res.Entry())
}

// vaultOf resolves the Vault of secret and checks that it is a Local Vault.
func (s *Service) vaultOf(ctx context.Context, secret *platformv1.Secret) (*Resolution, error) {
	res, err := s.Resolver.ResolveVaultOf(ctx, secret)
	if err != nil {
		return nil, err
	}
	if p := res.Vault.Definition.Provider; p != "" && p != platformv1.LocalVault {
		return nil, fmt.Errorf("%w: Vault %q has provider %q", ErrNotLocal, res.Vault.Name, p)
	}
	return res, nil
}

// Value resolves ref for a consumer in consumerNamespace (field is the reference's path in the
// consumer's definition) and opens its value. The caller uses the value for one request and
// never logs, stores or returns it.
func (s *Service) Value(ctx context.Context, consumerNamespace, field string, ref platformv1.SecretReference) ([]byte, error) {
	res, err := s.Resolver.Resolve(ctx, consumerNamespace, field, ref)
	if err != nil {
		return nil, err
	}
	if p := res.Vault.Definition.Provider; p != "" && p != platformv1.LocalVault {
		return nil, fmt.Errorf("%w: Vault %q has provider %q", ErrNotLocal, res.Vault.Name, p)
	}
	if s.Vault == nil {
		return nil, &UnavailableError{Availability: detached}
	}
	value, err := s.Vault.Get(ctx, res.Entry())
	if err != nil {
		return nil, fmt.Errorf("%s: Secret %q of %s: %w", field, res.Secret.Name, res.SecretPlace, err)
	}
	return value, nil
}

// SecretInspection is what a Secret's status reports: why its Vault does not resolve (Refusal),
// else the Vault's availability and whether it holds the value.
type SecretInspection struct {
	Refusal      *Refusal
	NotLocal     bool
	Availability Availability
	Entry        EntryState
}

// InspectSecret looks at secret's Vault and entry without opening the value.
func (s *Service) InspectSecret(ctx context.Context, secret *platformv1.Secret) (SecretInspection, error) {
	res, err := s.vaultOf(ctx, secret)
	if refusal, ok := AsRefusal(err); ok {
		return SecretInspection{Refusal: refusal}, nil
	}
	if errors.Is(err, ErrNotLocal) {
		return SecretInspection{NotLocal: true}, nil
	}
	if err != nil {
		return SecretInspection{}, err
	}
	var in SecretInspection
	if s.Vault == nil {
		in.Availability = detached
		return in, nil
	}
	if in.Availability, err = s.Vault.Availability(ctx, res.VaultPlace.Ref(), res.Vault.Name); err != nil {
		return in, err
	}
	in.Entry, err = s.Vault.State(ctx, res.Entry())
	return in, err
}

// VaultAvailability is the availability of a Local Vault.
func (s *Service) VaultAvailability(ctx context.Context, vault *platformv1.Vault) (Availability, error) {
	place, err := s.Resolver.Tree.OfNamespace(ctx, vault.Namespace)
	if err != nil {
		if errors.Is(err, ErrScopeNotFound) {
			return Availability{Reason: platformv1.InvalidScopeRefReason, Message: fmt.Sprintf("namespace %s belongs to no scope of this instance", vault.Namespace)}, nil
		}
		return Availability{}, err
	}
	if s.Vault == nil {
		return detached, nil
	}
	return s.Vault.Availability(ctx, place.Ref(), vault.Name)
}

// EntryOf is the Vault entry of secret, from its references alone: its Vault need not exist any
// more, so that the entry of a deleted Secret can be released.
func (s *Service) EntryOf(ctx context.Context, secret *platformv1.Secret) (Entry, error) {
	place, err := s.Resolver.Tree.OfNamespace(ctx, secret.Namespace)
	if err != nil {
		return Entry{}, err
	}
	vaultPlace, err := s.Resolver.Reach(ctx, place, "definition.vault", secret.Definition.Vault.ScopeRef)
	if err != nil {
		return Entry{}, err
	}
	return entryOf(secret, place, vaultPlace), nil
}

// ReleaseEntry removes the value of a Secret that is being deleted, unless one of others (the
// Secrets of its namespace) still uses the same entry. Without a Local Vault there is nothing to
// release.
func (s *Service) ReleaseEntry(ctx context.Context, secret *platformv1.Secret, others []platformv1.Secret) error {
	if s.Vault == nil {
		return nil
	}
	entry, err := s.EntryOf(ctx, secret)
	if err != nil {
		return err
	}
	for i := range others {
		other := &others[i]
		if other.UID == secret.UID || !other.DeletionTimestamp.IsZero() {
			continue
		}
		if e, err := s.EntryOf(ctx, other); err == nil && e == entry {
			return nil
		}
	}
	_, err = s.Vault.Delete(ctx, entry)
	return err
}

// Watch calls fn with the Local Vault's changes until ctx ends (see LocalVault.Watch); without a
// Local Vault there are none.
func (s *Service) Watch(ctx context.Context, fn func(Change)) {
	if s.Vault != nil {
		s.Vault.Watch(ctx, fn)
	}
}

// NamespaceOf is the kube namespace that holds the objects of the scope ref.
func (s *Service) NamespaceOf(ctx context.Context, ref platformv1.ScopeRef) (string, error) {
	place, err := s.Resolver.Tree.Of(ctx, ref)
	return place.Namespace, err
}

// EnsureScopeNamespace creates the namespace of an instance or tenant place, labelled, when it is
// missing; a workspace's namespace is the workspace's own and is left alone.
func EnsureScopeNamespace(ctx context.Context, c client.Client, place Place) error {
	if place.Scope.Kind == ownerscope.Workspace {
		return nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: place.Namespace, Labels: ownerscope.Labels(place.Scope)}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
