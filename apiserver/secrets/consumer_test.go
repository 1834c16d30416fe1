package secrets_test

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/provider/openaitest"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/internal/config"
)

// The first consumer of Secrets: a managed model call authenticates with the value of its
// ModelProvider's credential Secret, resolved in the provider's scope at each call.
func TestAManagedModelCallAuthenticatesWithTheKeyOfItsProvidersSecret(t *testing.T) {
	const (
		fromSecret   = "sk-from-the-secret-0f9a"
		fromAncestor = "sk-from-the-tenant-secret-77c1"
		fromVariable = "sk-from-the-variable-31d2"
	)
	tests := map[string]struct {
		// credential is the provider's reference; nil names none.
		credential *platformv1.SecretReference
		// grantTenantSecret grants a1 use of the tenant's Secret.
		grantTenantSecret bool
		// wantKey is the bearer the endpoint receives; "" expects the call to fail with wantError.
		wantKey   string
		wantError string
	}{
		"the key is the value of the provider's own Secret": {
			credential: &platformv1.SecretReference{Name: "llm-key"}, wantKey: fromSecret,
		},
		"a provider without a credential falls back to the variable": {
			wantKey: fromVariable,
		},
		"an ancestor's Secret is used through its grant": {
			credential: &platformv1.SecretReference{Name: "llm-key", ScopeRef: "tenantA"}, grantTenantSecret: true, wantKey: fromAncestor,
		},
		"an ancestor's Secret without a grant is refused, and the variable is not tried": {
			credential: &platformv1.SecretReference{Name: "llm-key", ScopeRef: "tenantA"},
			wantError:  "grants no use to",
		},
		"a Secret without a value is refused": {
			credential: &platformv1.SecretReference{Name: "unset-key"}, wantError: "the Vault holds no value for the Secret",
		},
	}
	w := newWorld(t)
	ctx := context.Background()
	vault := &secrets.LocalVault{Store: worldStore, MasterKey: secrets.MasterKeySource{File: filepath.Join(t.TempDir(), secrets.KeyFileName)}}
	if _, err := vault.Initialize(); err != nil {
		t.Fatal(err)
	}
	svc := &secrets.Service{Resolver: &secrets.Resolver{Reader: w.kube, Tree: w.tree}, Vault: vault}
	suffix := randomHex(3)
	vaultName := "consumer-" + suffix
	for _, in := range []string{"a1", "tenantA"} {
		if err := w.kube.Create(ctx, &platformv1.Vault{ObjectMeta: metav1.ObjectMeta{Namespace: w.places[in].Namespace, Name: vaultName}}); err != nil {
			t.Fatal(err)
		}
	}
	secret := func(in, name string, grants []grant) *platformv1.Secret {
		s := &platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.places[in].Namespace, Name: name + "-" + suffix}}
		s.Definition.Vault.Name = platformv1.ResourceName(vaultName)
		s.Definition.UsePolicy = w.policy(grants)
		if err := w.kube.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	own := secret("a1", "llm-key", nil)
	secret("a1", "unset-key", nil)
	tenants := secret("tenantA", "llm-key", nil)
	for s, value := range map[*platformv1.Secret]string{own: fromSecret, tenants: fromAncestor} {
		if err := svc.SetValue(ctx, s, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}

	i := 0
	for name, tt := range tests {
		i++
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			srv := openaitest.New()
			defer srv.Close()
			srv.APIKey = tt.wantKey

			if tt.grantTenantSecret {
				tenants.Definition.UsePolicy = w.policy([]grant{{to: "a1"}})
			} else {
				tenants.Definition.UsePolicy = nil
			}
			g.Expect(w.kube.Update(ctx, tenants)).To(Succeed())

			providerName := "llm-" + suffix + "-" + string(rune('a'+i))
			mp := &platformv1.ModelProvider{ObjectMeta: metav1.ObjectMeta{Namespace: w.places["a1"].Namespace, Name: providerName},
				Definition: platformv1.ModelProviderDefinition{Type: platformv1.OpenAICompatibleProvider, Endpoint: srv.BaseURL()}}
			if c := tt.credential; c != nil {
				ref := *c
				ref.Name += platformv1.ResourceName("-" + suffix)
				if ref.ScopeRef != "" {
					ref.ScopeRef = w.places[string(ref.ScopeRef)].Ref()
				}
				mp.Definition.Credential = &ref
			}
			g.Expect(w.kube.Create(ctx, mp)).To(Succeed())
			profile := &platformv1.ModelProfile{ObjectMeta: metav1.ObjectMeta{Namespace: w.places["a1"].Namespace, Name: providerName},
				Definition: platformv1.ModelProfileDefinition{Provider: platformv1.LocalObjectReference{Name: platformv1.ResourceName(providerName)}, ModelID: "gpt-test"}}
			g.Expect(w.kube.Create(ctx, profile)).To(Succeed())

			managed := &provider.ManagedProvider{Client: w.kube, Credentials: svc,
				Config: config.FromMap(config.Production, map[string]string{"AI:Providers:" + providerName + ":ApiKey": fromVariable})}
			act, err := managed.Invoke(ctx, provider.Request{Namespace: w.places["a1"].Namespace, Attempt: 1, Message: "hello",
				Agent: provider.Agent{Name: "assistant", ModelProfile: providerName}})
			if tt.wantError != "" {
				g.Expect(err).To(HaveOccurred())
				g.Expect(err.Error()).To(ContainSubstring(tt.wantError))
				g.Expect(provider.IsTransient(err)).To(BeFalse())
				for _, value := range []string{fromSecret, fromAncestor, fromVariable} {
					g.Expect(err.Error()).NotTo(ContainSubstring(value))
				}
				g.Expect(srv.Chats()).To(BeEmpty(), "nothing was sent")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(act.Text).To(Equal("echo: hello"))
			g.Expect(srv.Chats()).To(HaveLen(1))
			g.Expect(srv.Chats()[0].Authorization).To(Equal("Bearer " + tt.wantKey))
		})
	}
}
