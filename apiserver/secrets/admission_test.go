package secrets_test

import (
	"context"
	"fmt"
	"sort"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/ownerscope"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/secrets"
)

func TestAdmissionRefusesGrantsAndReferencesOutsideTheOwnersBranch(t *testing.T) {
	tests := map[string]struct {
		// kind is secret, vault or modelprovider; in is the owner's place.
		kind, in string
		grants   []grant
		// ref is the place the vault or credential scopeRef names.
		ref string
		// wantField is the path of the refusal; "" admits the object.
		wantField string
	}{
		"a tenant's Secret may grant one of its workspaces":       {kind: "secret", in: "tenantA", grants: []grant{{to: "a1"}}},
		"a tenant's Secret may grant itself with its workspaces":  {kind: "secret", in: "tenantA", grants: []grant{{to: "tenantA", descendants: true}}},
		"a grant to a sibling tenant is refused":                  {kind: "secret", in: "tenantA", grants: []grant{{to: "a1"}, {to: "tenantB"}}, wantField: "definition.usePolicy.grants[1].scopeRef"},
		"a grant to an ancestor is refused":                       {kind: "secret", in: "tenantA", grants: []grant{{to: "instance", descendants: true}}, wantField: "definition.usePolicy.grants[0].scopeRef"},
		"a grant into another tenant's branch is refused":         {kind: "vault", in: "tenantA", grants: []grant{{to: "b1"}}, wantField: "definition.usePolicy.grants[0].scopeRef"},
		"a workspace's Secret may not grant a sibling workspace":  {kind: "secret", in: "a1", grants: []grant{{to: "a2"}}, wantField: "definition.usePolicy.grants[0].scopeRef"},
		"a workspace's Vault may not grant its tenant":            {kind: "vault", in: "a1", grants: []grant{{to: "tenantA"}}, wantField: "definition.usePolicy.grants[0].scopeRef"},
		"the instance may grant any tenant or workspace":          {kind: "vault", in: "instance", grants: []grant{{to: "tenantB", descendants: true}, {to: "a2"}}},
		"a grant to a scope that does not exist is refused":       {kind: "vault", in: "instance", grants: []grant{{to: "nowhere"}}, wantField: "definition.usePolicy.grants[0].scopeRef"},
		"a Secret may store its value in its tenant's Vault":      {kind: "secret", in: "a1", ref: "tenantA"},
		"a Secret may store its value in the instance's Vault":    {kind: "secret", in: "a1", ref: "instance"},
		"a Secret may not name a sibling's Vault":                 {kind: "secret", in: "a1", ref: "a2", wantField: "definition.vault.scopeRef"},
		"a Secret may not name another tenant's Vault":            {kind: "secret", in: "a1", ref: "tenantB", wantField: "definition.vault.scopeRef"},
		"a tenant's Secret may not name a workspace's Vault":      {kind: "secret", in: "tenantA", ref: "a1", wantField: "definition.vault.scopeRef"},
		"a model provider may name its tenant's Secret":           {kind: "modelprovider", in: "a1", ref: "tenantA"},
		"a model provider may not name another tenant's Secret":   {kind: "modelprovider", in: "a1", ref: "tenantB", wantField: "definition.credential.scopeRef"},
		"a model provider may not name a sibling workspace's one": {kind: "modelprovider", in: "a2", ref: "a1", wantField: "definition.credential.scopeRef"},
	}
	w := newWorld(t)
	ctx := context.Background()
	w.places["nowhere"] = placeNamed(ownerscope.Of(ownerscope.Tenant, "0000000000000000000000000000beef"))
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
			obj := w.object(tt.kind, tt.in, fmt.Sprintf("adm-%d-%s", i, suffix), tt.grants, tt.ref)
			err := w.kube.Create(ctx, obj)
			if tt.wantField == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "422 Invalid, got %v", err)
			causes := err.(apierrors.APIStatus).Status().Details.Causes
			g.Expect(causes).To(HaveLen(1))
			g.Expect(causes[0].Field).To(Equal(tt.wantField))
			g.Expect(apierrors.IsNotFound(w.kube.Get(ctx, client.ObjectKeyFromObject(obj), obj))).To(BeTrue(), "nothing stored")
		})
	}
}

func TestAdmissionRevalidatesOnlyWhatAnUpdateChanges(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t)
	ctx := context.Background()
	secret := w.object("secret", "tenantA", "stored-before-"+randomHex(3), []grant{{to: "instance", descendants: true}}, "").(*platformv1.Secret)
	withoutAdmission(func() { g.Expect(w.kube.Create(ctx, secret)).To(Succeed()) })

	secret.Definition.DisplayName = "renamed"
	g.Expect(w.kube.Update(ctx, secret)).To(Succeed(), "a change elsewhere is admitted")
	secret.Definition.UsePolicy.Grants = append(secret.Definition.UsePolicy.Grants, platformv1.UseGrant{ScopeRef: w.places["a1"].Ref()})
	err := w.kube.Update(ctx, secret)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "a changed grant list is checked whole: %v", err)
}

func TestScopeNamespacesHoldOnlySecretsAndVaults(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t)
	for _, in := range []string{"instance", "tenantA"} {
		agent := &platformv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: w.places[in].Namespace, Name: "not-here-" + randomHex(3)}}
		err := w.kube.Create(context.Background(), agent)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: %v", in, err)
		g.Expect(err.Error()).To(ContainSubstring("holds only the Secrets and Vaults of its scope"))
	}
}

func placeNamed(s ownerscope.Scope) secrets.Place {
	ns, _ := ownerscope.TenantNamespace(s.ID)
	return secrets.Place{Scope: s, Tenant: s.ID, Namespace: ns}
}

// object builds a Secret, Vault or ModelProvider of the place in, with grants and a reference
// (vault or credential) to the place ref.
func (w *world) object(kind, in, name string, grants []grant, ref string) client.Object {
	meta := metav1.ObjectMeta{Namespace: w.places[in].Namespace, Name: name}
	var scopeRef platformv1.ScopeRef
	if ref != "" {
		scopeRef = w.places[ref].Ref()
	}
	switch kind {
	case "secret":
		s := &platformv1.Secret{ObjectMeta: meta}
		s.Definition.Vault = platformv1.VaultReference{Name: "local", ScopeRef: scopeRef}
		s.Definition.UsePolicy = w.policy(grants)
		return s
	case "vault":
		v := &platformv1.Vault{ObjectMeta: meta}
		v.Definition.UsePolicy = w.policy(grants)
		return v
	}
	p := &platformv1.ModelProvider{ObjectMeta: meta}
	p.Definition.Type = platformv1.DeterministicProvider
	p.Definition.Credential = &platformv1.SecretReference{Name: "key", ScopeRef: scopeRef}
	return p
}

func TestAdmissionNeverRefusesAnUpdateThatLeavesTheDefinitionAlone(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t)
	ctx := context.Background()
	// A tenant namespace whose tenant the identity store does not know (gone, or never there).
	orphanNamespace, _ := ownerscope.TenantNamespace("0000000000000000000000000000cafe")
	g.Expect(secrets.EnsureScopeNamespace(ctx, w.kube, placeNamed(ownerscope.Of(ownerscope.Tenant, "0000000000000000000000000000cafe")))).To(Succeed())
	secret := &platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: orphanNamespace, Name: "left-behind", Finalizers: []string{"platform.dev/vault-entry"}}}
	secret.Definition.Vault.Name = "local"
	withoutAdmission(func() { g.Expect(w.kube.Create(ctx, secret)).To(Succeed()) })

	secret.Definition.DisplayName = "changed"
	err := w.kube.Update(ctx, secret)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a change of the definition is checked: %v", err)
	g.Expect(w.kube.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
	secret.Finalizers = nil
	g.Expect(w.kube.Update(ctx, secret)).To(Succeed(), "removing a finalizer is never refused")
	g.Expect(w.kube.Delete(ctx, secret)).To(Succeed())
}
