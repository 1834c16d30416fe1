package controllers_test

import (
	"encoding/base64"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/secrets"
	secretcontroller "platform.dev/platform/controllers/secret"
)

var _ = Describe("Secrets and Vaults", func() {
	var (
		ns     string
		vault  *platformv1.Vault
		secret *platformv1.Secret
		values *secrets.Service
	)
	BeforeEach(func() {
		ns = newWorkspace()
		vault = &platformv1.Vault{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "local"}}
		Expect(k8sClient.Create(ctx, vault)).To(Succeed())
		secret = &platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-key"},
			Definition: platformv1.SecretDefinition{Vault: platformv1.VaultReference{Name: "local"}}}
		Expect(k8sClient.Create(ctx, secret)).To(Succeed())
		values = &secrets.Service{Resolver: &secrets.Resolver{Reader: k8sClient, Tree: secrets.IdentityTree{}}, Vault: localVault}
	})

	It("a Secret is Configured once its value is written and Missing again once it is removed", func() {
		expectReady(secret, metav1.ConditionFalse, platformv1.SecretValueMissingReason)
		Expect(values.SetValue(ctx, secret, []byte("sk-written"))).To(Succeed())
		expectReady(secret, metav1.ConditionTrue, platformv1.ResolvedReason)
		Expect(secret.Status.State).To(Equal(platformv1.SecretConfigured))

		existed, err := values.DeleteValue(ctx, secret)
		Expect(err).NotTo(HaveOccurred())
		Expect(existed).To(BeTrue())
		expectReady(secret, metav1.ConditionFalse, platformv1.SecretValueMissingReason)
		Expect(secret.Status.State).To(Equal(platformv1.SecretMissing))
	})

	It("deleting a Secret removes its value from the Vault, unless another Secret of its scope uses the same entry", func() {
		twin := &platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "twin"},
			Definition: platformv1.SecretDefinition{Vault: platformv1.VaultReference{Name: "local"}, VaultKey: "api-key"}}
		Expect(k8sClient.Create(ctx, twin)).To(Succeed())
		Expect(values.SetValue(ctx, secret, []byte("sk-shared-entry"))).To(Succeed())
		expectReady(twin, metav1.ConditionTrue, platformv1.ResolvedReason)
		Expect(twin.Finalizers).To(ContainElement(secretcontroller.VaultEntryFinalizer))
		entry, err := values.EntryOf(ctx, secret)
		Expect(err).NotTo(HaveOccurred())

		Expect(k8sClient.Delete(ctx, twin)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(twin), twin)) }).Should(BeTrue())
		state, err := localVault.State(ctx, entry)
		Expect(err).NotTo(HaveOccurred())
		Expect(state.Present).To(BeTrue(), "the other Secret still uses the entry")

		Expect(k8sClient.Delete(ctx, secret)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(secret), secret))
		}).Should(BeTrue())
		state, err = localVault.State(ctx, entry)
		Expect(err).NotTo(HaveOccurred())
		Expect(state.Present).To(BeFalse(), "no ciphertext outlives its last Secret")

		again := &platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-key"},
			Definition: platformv1.SecretDefinition{Vault: platformv1.VaultReference{Name: "local"}}}
		Expect(k8sClient.Create(ctx, again)).To(Succeed())
		expectReady(again, metav1.ConditionFalse, platformv1.SecretValueMissingReason)
	})

	It("a Secret whose Vault does not exist is VaultNotFound with the field path", func() {
		orphan := &platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan"},
			Definition: platformv1.SecretDefinition{Vault: platformv1.VaultReference{Name: "elsewhere"}}}
		Expect(k8sClient.Create(ctx, orphan)).To(Succeed())
		ready := expectReady(orphan, metav1.ConditionFalse, platformv1.VaultNotFoundReason)
		Expect(ready.Message).To(HavePrefix(`definition.vault.name: Vault "elsewhere" not found`))
	})

	It("a replaced master key makes the Vault Unavailable and its Secrets unreadable; the original key restores them", func() {
		Expect(values.SetValue(ctx, secret, []byte("sk-under-the-suite-key"))).To(Succeed())
		expectReady(secret, metav1.ConditionTrue, platformv1.ResolvedReason)
		original, err := os.ReadFile(localVault.MasterKey.File)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(os.WriteFile(localVault.MasterKey.File, original, 0o600)).To(Succeed()) })

		Expect(os.WriteFile(localVault.MasterKey.File, []byte(newMasterKey()), 0o600)).To(Succeed())
		// The Vault notices on its next resync; a change to it makes that now.
		touch(vault)
		ready := expectReady(vault, metav1.ConditionFalse, platformv1.MasterKeyReplacedReason)
		Expect(ready.Message).To(ContainSubstring("another master key"))
		Expect(vault.Status.Availability).To(Equal(platformv1.VaultUnavailableState))
		expectReady(secret, metav1.ConditionFalse, platformv1.VaultUnavailableReason)
		Expect(secret.Status.State).To(Equal(platformv1.SecretConfigured), "the value is still there, unreadable")
		_, err = values.Value(ctx, ns, "definition.credential", platformv1.SecretReference{Name: "api-key"})
		Expect(err).To(MatchError(secrets.ErrValueUnreadable))

		Expect(os.WriteFile(localVault.MasterKey.File, original, 0o600)).To(Succeed())
		touch(vault)
		expectReady(vault, metav1.ConditionTrue, platformv1.ResolvedReason)
		expectReady(secret, metav1.ConditionTrue, platformv1.ResolvedReason)
		value, err := values.Value(ctx, ns, "definition.credential", platformv1.SecretReference{Name: "api-key"})
		Expect(err).NotTo(HaveOccurred())
		Expect(string(value)).To(Equal("sk-under-the-suite-key"))
	})

	It("a malformed master key makes the Vault Unavailable with the reason", func() {
		original, err := os.ReadFile(localVault.MasterKey.File)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(os.WriteFile(localVault.MasterKey.File, original, 0o600)).To(Succeed()) })
		Expect(os.WriteFile(localVault.MasterKey.File, []byte("too-short"), 0o600)).To(Succeed())
		touch(vault)
		ready := expectReady(vault, metav1.ConditionFalse, platformv1.MasterKeyInvalidReason)
		Expect(ready.Message).To(ContainSubstring(localVault.MasterKey.File))
		Expect(ready.Message).To(ContainSubstring("32 random bytes in Base64"))
	})
})

// touch changes an annotation of obj, which makes its reconciler look at it now.
func touch(obj *platformv1.Vault) {
	GinkgoHelper()
	update(obj, func() {
		if obj.Annotations == nil {
			obj.Annotations = map[string]string{}
		}
		obj.Annotations["test/touched"] = metav1.Now().String()
	})
}

func newMasterKey() string {
	b := make([]byte, 32)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return base64.StdEncoding.EncodeToString(b)
}
