package secrets

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/ownerscope"
	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Refusal is why a reference does not resolve: a Ready reason of the API package and a sentence
// with the field path. It never carries a value.
type Refusal struct {
	Reason  string
	Message string
}

func (r *Refusal) Error() string { return r.Message }

func refuse(reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// AsRefusal returns the Refusal in err's chain.
func AsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	ok := errors.As(err, &r)
	return r, ok
}

// Resolution is a Secret reference resolved for one consumer: the Secret, its Vault, and where
// each belongs.
type Resolution struct {
	Consumer    Place
	Secret      *platformv1.Secret
	SecretPlace Place
	Vault       *platformv1.Vault
	VaultPlace  Place
}

// Entry is the Vault entry that holds the Secret's value.
func (r *Resolution) Entry() Entry { return entryOf(r.Secret, r.SecretPlace, r.VaultPlace) }

// entryOf is the entry of secret, owned by secretPlace, in its Vault of vaultPlace.
func entryOf(secret *platformv1.Secret, secretPlace, vaultPlace Place) Entry {
	key := secret.Definition.VaultKey
	if key == "" {
		key = secret.Name
	}
	return Entry{VaultScope: vaultPlace.Ref(), Vault: string(secret.Definition.Vault.Name), SecretScope: secretPlace.Ref(), Key: key}
}

// Resolver applies the rules of Secret and Vault use. It is the one implementation of them:
// every consumer (the model providers, the controllers' status, the value routes, admission's
// reference checks) calls it.
//
//   - An omitted scopeRef means the referrer's own scope; an ancestor's object is named by its
//     exact scopeRef; names are never searched through parent scopes.
//   - A reference reaches only the referrer's own scope or an ancestor: never a sibling, a
//     descendant or another tenant's branch.
//   - A Secret of an ancestor scope is usable only when its own usePolicy grants the consumer's
//     scope; a Vault of an ancestor scope only when its usePolicy grants the Secret's scope.
//   - A grant names a scope at or below the owner; a tenant grant may include its workspaces.
//   - Same-named objects at different scopes are distinct, and so are their Vault entries.
type Resolver struct {
	// Reader reads Secrets and Vaults.
	Reader client.Reader
	Tree   Tree
}

// Resolve resolves ref for a consumer whose objects live in consumerNamespace: the Secret, then
// its Vault. field is the reference's path in the consumer's definition, for messages
// ("definition.credential").
func (r *Resolver) Resolve(ctx context.Context, consumerNamespace, field string, ref platformv1.SecretReference) (*Resolution, error) {
	secret, consumer, owner, err := r.resolveSecret(ctx, consumerNamespace, field, ref)
	if err != nil {
		return nil, err
	}
	res, err := r.resolveVault(ctx, secret, owner)
	if err != nil {
		return nil, err
	}
	res.Consumer = consumer
	return res, nil
}

// ResolveSecret resolves only the Secret that ref names for the consumer, not its Vault: whether
// the Vault resolves and holds the value is the Secret's own status.
func (r *Resolver) ResolveSecret(ctx context.Context, consumerNamespace, field string, ref platformv1.SecretReference) (*platformv1.Secret, error) {
	secret, _, _, err := r.resolveSecret(ctx, consumerNamespace, field, ref)
	return secret, err
}

func (r *Resolver) resolveSecret(ctx context.Context, consumerNamespace, field string, ref platformv1.SecretReference) (*platformv1.Secret, Place, Place, error) {
	consumer, err := r.Tree.OfNamespace(ctx, consumerNamespace)
	if err != nil {
		return nil, Place{}, Place{}, r.placeError(err, field, "namespace "+consumerNamespace)
	}
	owner, err := r.Reach(ctx, consumer, field, ref.ScopeRef)
	if err != nil {
		return nil, Place{}, Place{}, err
	}
	if ref.Namespace != "" && ref.Namespace != platformv1.DefaultResourceNamespace {
		return nil, Place{}, Place{}, refuse(platformv1.SecretNotFoundReason,
			"%s.namespace: Secrets live in the default resource namespace of their scope, not in %q", field, ref.Namespace)
	}
	secret := &platformv1.Secret{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: owner.Namespace, Name: string(ref.Name)}, secret); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, Place{}, Place{}, err
		}
		return nil, Place{}, Place{}, refuse(platformv1.SecretNotFoundReason, "%s.name: Secret %q not found in %s%s",
			field, ref.Name, owner, notSearchedHint(ref.ScopeRef))
	}
	if owner.Scope != consumer.Scope && !Granted(secret.Definition.UsePolicy, owner, consumer) {
		return nil, Place{}, Place{}, refuse(platformv1.UseNotGrantedReason,
			"%s: Secret %q of %s grants no use to %s (definition.usePolicy.grants)", field, ref.Name, owner, consumer)
	}
	return secret, consumer, owner, nil
}

// ResolveVaultOf resolves the Vault of a Secret for the Secret itself: the Secret is the
// consumer of its Vault.
func (r *Resolver) ResolveVaultOf(ctx context.Context, secret *platformv1.Secret) (*Resolution, error) {
	place, err := r.Tree.OfNamespace(ctx, secret.Namespace)
	if err != nil {
		return nil, r.placeError(err, "metadata.namespace", "namespace "+secret.Namespace)
	}
	res, err := r.resolveVault(ctx, secret, place)
	if err != nil {
		return nil, err
	}
	res.Consumer = place
	return res, nil
}

func (r *Resolver) resolveVault(ctx context.Context, secret *platformv1.Secret, secretPlace Place) (*Resolution, error) {
	ref := secret.Definition.Vault
	owner, err := r.Reach(ctx, secretPlace, "definition.vault", ref.ScopeRef)
	if err != nil {
		return nil, err
	}
	vault := &platformv1.Vault{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: owner.Namespace, Name: string(ref.Name)}, vault); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
		return nil, refuse(platformv1.VaultNotFoundReason, "definition.vault.name: Vault %q not found in %s%s",
			ref.Name, owner, notSearchedHint(ref.ScopeRef))
	}
	if owner.Scope != secretPlace.Scope && !Granted(vault.Definition.UsePolicy, owner, secretPlace) {
		return nil, refuse(platformv1.UseNotGrantedReason,
			"definition.vault: Vault %q of %s grants no use to the Secret's scope %s (its definition.usePolicy.grants)", ref.Name, owner, secretPlace)
	}
	return &Resolution{Secret: secret, SecretPlace: secretPlace, Vault: vault, VaultPlace: owner}, nil
}

// Reach is the place a reference's scopeRef names for a referrer at from: from itself when
// omitted, else that scope, which must be from or one of its ancestors.
func (r *Resolver) Reach(ctx context.Context, from Place, field string, ref platformv1.ScopeRef) (Place, error) {
	if ref == "" {
		return from, nil
	}
	to, err := r.Tree.Of(ctx, ref)
	if err != nil {
		return Place{}, r.placeError(err, field+".scopeRef", string(ref))
	}
	if !to.Contains(from) {
		return Place{}, refuse(platformv1.InvalidScopeRefReason,
			"%s.scopeRef: %s is neither the referrer's scope %s nor one of its ancestors; a reference never reaches a sibling, a descendant or another tenant", field, ref, from)
	}
	return to, nil
}

// placeError turns a failure to place a scope into a Refusal when the scope does not exist.
func (r *Resolver) placeError(err error, field, what string) error {
	if errors.Is(err, ErrScopeNotFound) {
		return refuse(platformv1.InvalidScopeRefReason, "%s: %s is not a scope of this instance", field, what)
	}
	return err
}

// notSearchedHint reminds, when a reference named no scope, that names are not looked up above.
func notSearchedHint(ref platformv1.ScopeRef) string {
	if ref != "" {
		return ""
	}
	return " (an omitted scopeRef means the referrer's own scope; names are never searched through parent scopes: name an ancestor's object with its exact scopeRef)"
}

// Granted reports whether a usePolicy of an object owned by owner lets user (a scope below the
// owner) use it: a grant names user's scope exactly, or includes descendants and names an
// ancestor of user. A grant that names a scope above the owner counts for nothing (admission
// refuses it; one stored before is ignored).
func Granted(policy *platformv1.UsePolicy, owner, user Place) bool {
	if policy == nil || !owner.Contains(user) {
		return false
	}
	for _, g := range policy.Grants {
		s, err := ownerscope.Parse(g.ScopeRef)
		if err != nil || level(s.Kind) < level(owner.Scope.Kind) {
			continue
		}
		if user.names(s) {
			return true
		}
		if !g.IncludeDescendants {
			continue
		}
		switch s.Kind {
		case ownerscope.Instance:
			return true
		case ownerscope.Tenant:
			if user.Tenant == s.ID {
				return true
			}
		}
	}
	return false
}
