package secrets_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/ownerscope"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/internal/resourcenamespace"
)

// grant is a usePolicy grant of the table below; to names a place of the world.
type grant struct {
	to          string
	descendants bool
}

// The rules of Secret and Vault use as one table: where the Secret and its Vault live and what
// they grant (scope × grant), who asks for the Secret and how it names it (consumer), and
// whether the reference resolves or is refused, with the reason. Places: instance, tenantA
// (workspaces a1, a2), tenantB (workspace b1). A Vault lives beside its Secret unless vaultIn says
// otherwise.
func TestResolverAppliesTheRulesOfScopesAndGrants(t *testing.T) {
	tests := map[string]struct {
		secretIn     string
		secretGrants []grant
		vaultIn      string
		vaultGrants  []grant
		// vaultRef is the place the Secret's vault.scopeRef names; "" omits it.
		vaultRef string
		consumer string
		// ref is the place the consumer's scopeRef names; "" omits it. refByRouteName names a
		// workspace by its route name instead of its id.
		ref            string
		refByRouteName bool
		refLiteral     platformv1.ScopeRef
		// storedWithoutAdmission stores objects that admission refuses, as a server without it
		// would have: the Resolver must not trust them.
		storedWithoutAdmission bool
		wantReason             string
	}{
		"an omitted scopeRef means the consumer's own scope": {
			secretIn: "a1", consumer: "a1",
		},
		"the consumer's own scope may also be named, by id": {
			secretIn: "a1", consumer: "a1", ref: "a1",
		},
		"a workspace may be named by its route name": {
			secretIn: "a1", consumer: "a1", ref: "a1", refByRouteName: true,
		},
		"names are never searched through parent scopes": {
			secretIn: "tenantA", secretGrants: []grant{{to: "a1"}}, consumer: "a1",
			wantReason: platformv1.SecretNotFoundReason,
		},
		"an ancestor's Secret is named by its exact scopeRef and used through its grant": {
			secretIn: "tenantA", secretGrants: []grant{{to: "a1"}}, consumer: "a1", ref: "tenantA",
		},
		"nobody may use an ancestor's Secret by default": {
			secretIn: "tenantA", consumer: "a1", ref: "tenantA",
			wantReason: platformv1.UseNotGrantedReason,
		},
		"a grant to a workspace does not reach its sibling": {
			secretIn: "tenantA", secretGrants: []grant{{to: "a1"}}, consumer: "a2", ref: "tenantA",
			wantReason: platformv1.UseNotGrantedReason,
		},
		"a tenant grant may include its workspaces": {
			secretIn: "tenantA", secretGrants: []grant{{to: "tenantA", descendants: true}}, consumer: "a2", ref: "tenantA",
		},
		"a tenant grant without includeDescendants does not reach its workspaces": {
			secretIn: "tenantA", secretGrants: []grant{{to: "tenantA"}}, consumer: "a2", ref: "tenantA",
			wantReason: platformv1.UseNotGrantedReason,
		},
		"an instance grant with descendants reaches the workspaces of every tenant": {
			secretIn: "instance", secretGrants: []grant{{to: "instance", descendants: true}}, consumer: "b1", ref: "instance",
		},
		"an instance Secret granted to a tenant and its workspaces": {
			secretIn: "instance", secretGrants: []grant{{to: "tenantB", descendants: true}}, consumer: "b1", ref: "instance",
		},
		"a grant to one tenant's branch does not reach another tenant": {
			secretIn: "instance", secretGrants: []grant{{to: "tenantB", descendants: true}}, consumer: "a1", ref: "instance",
			wantReason: platformv1.UseNotGrantedReason,
		},
		"a grant naming an ancestor of the owner counts for nothing": {
			secretIn: "tenantA", secretGrants: []grant{{to: "instance", descendants: true}}, consumer: "a1", ref: "tenantA",
			storedWithoutAdmission: true, wantReason: platformv1.UseNotGrantedReason,
		},
		"a reference never reaches another tenant's branch": {
			secretIn: "tenantB", secretGrants: []grant{{to: "tenantB", descendants: true}}, consumer: "a1", ref: "tenantB",
			wantReason: platformv1.InvalidScopeRefReason,
		},
		"a reference never reaches a sibling workspace": {
			secretIn: "a2", consumer: "a1", ref: "a2",
			wantReason: platformv1.InvalidScopeRefReason,
		},
		"a reference never reaches a descendant": {
			secretIn: "a1", consumer: "tenantA", ref: "a1",
			wantReason: platformv1.InvalidScopeRefReason,
		},
		"a scopeRef naming no scope of the instance is refused": {
			secretIn: "a1", consumer: "a1", refLiteral: "/tenants/0000000000000000000000000000dead",
			wantReason: platformv1.InvalidScopeRefReason,
		},
		"an omitted vault scopeRef means the Secret's own scope": {
			secretIn: "a1", vaultIn: "tenantA", vaultGrants: []grant{{to: "a1"}}, consumer: "a1",
			wantReason: platformv1.VaultNotFoundReason,
		},
		"an ancestor Vault stores the values of a scope it grants": {
			secretIn: "a1", vaultIn: "tenantA", vaultGrants: []grant{{to: "a1"}}, vaultRef: "tenantA", consumer: "a1",
		},
		"an ancestor Vault needs a grant for the Secret's scope": {
			secretIn: "a1", vaultIn: "tenantA", vaultRef: "tenantA", consumer: "a1",
			wantReason: platformv1.UseNotGrantedReason,
		},
		"an ancestor Vault's grant is checked against the Secret's scope, not the consumer's": {
			secretIn: "tenantA", secretGrants: []grant{{to: "a1"}}, vaultIn: "instance", vaultGrants: []grant{{to: "a1"}}, vaultRef: "instance",
			consumer: "a1", ref: "tenantA",
			wantReason: platformv1.UseNotGrantedReason,
		},
		"a Vault reference never reaches a sibling": {
			secretIn: "a1", vaultIn: "a2", vaultRef: "a2", consumer: "a1",
			storedWithoutAdmission: true, wantReason: platformv1.InvalidScopeRefReason,
		},
		"a missing Secret is not found": {
			consumer:   "a1",
			wantReason: platformv1.SecretNotFoundReason,
		},
	}
	w := newWorld(t)
	ctx := context.Background()
	resolver := &secrets.Resolver{Reader: w.kube, Tree: w.tree}
	names := make([]string, 0, len(tests))
	for name := range tests {
		names = append(names, name)
	}
	sort.Strings(names)
	suffix := randomHex(3)
	for i, name := range names {
		tt := tests[name]
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			secretName, vaultName := fmt.Sprintf("s-%d-%s", i, suffix), fmt.Sprintf("v-%d-%s", i, suffix)
			vaultIn := tt.vaultIn
			if vaultIn == "" {
				vaultIn = tt.secretIn
			}
			create := func(obj client.Object) {
				if tt.storedWithoutAdmission {
					withoutAdmission(func() { g.Expect(w.kube.Create(ctx, obj)).To(Succeed()) })
					return
				}
				g.Expect(w.kube.Create(ctx, obj)).To(Succeed())
			}
			if vaultIn != "" {
				vault := &platformv1.Vault{ObjectMeta: metav1.ObjectMeta{Namespace: w.places[vaultIn].Namespace, Name: vaultName}}
				vault.Definition.UsePolicy = w.policy(tt.vaultGrants)
				create(vault)
			}
			if tt.secretIn != "" {
				secret := &platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.places[tt.secretIn].Namespace, Name: secretName}}
				secret.Definition.Vault = platformv1.VaultReference{Name: platformv1.ResourceName(vaultName)}
				if tt.vaultRef != "" {
					secret.Definition.Vault.ScopeRef = w.places[tt.vaultRef].Ref()
				}
				secret.Definition.UsePolicy = w.policy(tt.secretGrants)
				create(secret)
			}
			ref := platformv1.SecretReference{Name: platformv1.ResourceName(secretName), ScopeRef: tt.refLiteral}
			if tt.ref != "" {
				ref.ScopeRef = w.places[tt.ref].Ref()
				if tt.refByRouteName {
					ref.ScopeRef = ownerscope.Of(ownerscope.Workspace, w.places[tt.ref].Namespace).Ref()
				}
			}

			res, err := resolver.Resolve(ctx, w.places[tt.consumer].Namespace, "definition.credential", ref)
			if tt.wantReason != "" {
				refusal, ok := secrets.AsRefusal(err)
				g.Expect(ok).To(BeTrue(), "a Refusal, got %v", err)
				g.Expect(refusal.Reason).To(Equal(tt.wantReason), refusal.Message)
				g.Expect(refusal.Message).To(HavePrefix("definition."), "the message names the field")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Secret.Name).To(Equal(secretName))
			g.Expect(res.Vault.Name).To(Equal(vaultName))
			g.Expect(res.Entry()).To(Equal(secrets.Entry{
				VaultScope: w.places[vaultIn].Ref(), Vault: vaultName, SecretScope: w.places[tt.secretIn].Ref(), Key: secretName,
			}))
		})
	}
}

func (w *world) policy(grants []grant) *platformv1.UsePolicy {
	if len(grants) == 0 {
		return nil
	}
	policy := &platformv1.UsePolicy{}
	for _, g := range grants {
		policy.Grants = append(policy.Grants, platformv1.UseGrant{ScopeRef: w.places[g.to].Ref(), IncludeDescendants: g.descendants})
	}
	return policy
}

func TestSameNamedSecretsAtDifferentScopesAreDistinct(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t)
	ctx := context.Background()
	name := "same-" + randomHex(3)
	// One Vault of the tenant, granted to a1, stores both Secrets' values.
	vault := &platformv1.Vault{ObjectMeta: metav1.ObjectMeta{Namespace: w.places["tenantA"].Namespace, Name: name}}
	vault.Definition.UsePolicy = w.policy([]grant{{to: "a1"}})
	g.Expect(w.kube.Create(ctx, vault)).To(Succeed())
	for _, in := range []string{"tenantA", "a1"} {
		secret := &platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.places[in].Namespace, Name: name}}
		secret.Definition.Vault = platformv1.VaultReference{Name: platformv1.ResourceName(name), ScopeRef: w.places["tenantA"].Ref()}
		secret.Definition.UsePolicy = w.policy([]grant{{to: "a1"}})
		g.Expect(w.kube.Create(ctx, secret)).To(Succeed())
	}
	resolver := &secrets.Resolver{Reader: w.kube, Tree: w.tree}
	own, err := resolver.Resolve(ctx, w.places["a1"].Namespace, "credential", platformv1.SecretReference{Name: platformv1.ResourceName(name)})
	g.Expect(err).NotTo(HaveOccurred())
	ancestors, err := resolver.Resolve(ctx, w.places["a1"].Namespace, "credential", platformv1.SecretReference{Name: platformv1.ResourceName(name), ScopeRef: w.places["tenantA"].Ref()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(own.Entry()).NotTo(Equal(ancestors.Entry()))
	g.Expect(own.Entry().Key).To(Equal(ancestors.Entry().Key), "the same vault key in the same Vault")
	g.Expect(strings.HasPrefix(string(own.Entry().SecretScope), "/workspaces/")).To(BeTrue())
	g.Expect(strings.HasPrefix(string(ancestors.Entry().SecretScope), "/tenants/")).To(BeTrue())
}

func TestAConsumerInAPackNamespaceUsesTheSecretsOfItsWorkspace(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t)
	ctx := context.Background()
	packNamespace, err := resourcenamespace.Ensure(ctx, w.kube, w.places["a1"].Namespace, "acme.tools")
	g.Expect(err).NotTo(HaveOccurred())
	place, err := w.tree.OfNamespace(ctx, packNamespace)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(place.Scope).To(Equal(w.places["a1"].Scope), "a Pack namespace belongs to its workspace's scope")
	g.Expect(place.ResourceNamespace).To(Equal(platformv1.ResourceNamespace("acme.tools")))

	name := "pack-key-" + randomHex(3)
	vault := &platformv1.Vault{ObjectMeta: metav1.ObjectMeta{Namespace: w.places["a1"].Namespace, Name: name}}
	g.Expect(w.kube.Create(ctx, vault)).To(Succeed())
	secret := &platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.places["a1"].Namespace, Name: name}}
	secret.Definition.Vault.Name = platformv1.ResourceName(name)
	g.Expect(w.kube.Create(ctx, secret)).To(Succeed())

	res, err := (&secrets.Resolver{Reader: w.kube, Tree: w.tree}).Resolve(ctx, packNamespace, "definition.credential", platformv1.SecretReference{Name: platformv1.ResourceName(name)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Secret.Namespace).To(Equal(w.places["a1"].Namespace))

	// Admission reads namespaces from the server's informer, which learns of the new Pack
	// namespace shortly after it was made.
	g.Eventually(func(g Gomega) {
		inPack := &platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: packNamespace, Name: "in-pack-" + randomHex(3)}}
		inPack.Definition.Vault.Name = platformv1.ResourceName(name)
		err := w.kube.Create(ctx, inPack)
		if err == nil {
			w.kube.Delete(ctx, inPack)
		}
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "Packs carry Secrets only as bindings: %v", err)
	}).Should(Succeed())
}
