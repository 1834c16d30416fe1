package controllers_test

import (
	"bytes"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/internal/apply"
)

var _ = Describe("The samples", func() {
	It("apply into default and every sample becomes Ready, the Secret once its value is written; the Flow and the Entry publish themselves", func() {
		var out, errOut bytes.Buffer
		// The folder's own manifests: its packs/ folder holds Pack sources (binding references a
		// kind's schema does not know until a Pack is installed), which are not applied.
		paths, err := filepath.Glob(filepath.Join("..", "config", "samples", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		err = apply.Run(ctx, apply.Options{
			Paths:     paths,
			Namespace: metav1.NamespaceDefault,
			Dynamic:   platform.Dynamic,
			Mapper:    restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(platform.Kube.Discovery())),
			Out:       &out, Err: &errOut,
		})
		Expect(err).NotTo(HaveOccurred(), "%s", errOut.String())
		GinkgoWriter.Print(out.String())

		inDefault := client.InNamespace(metav1.NamespaceDefault)
		// The Flow and the Entry publish automatically: their published objects appear.
		published := &platformv1.PublishedEntry{}
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "support-request"}, published)
		}).Should(Succeed())
		ready := map[string]client.ObjectList{
			"agents":            &platformv1.AgentList{},
			"model profiles":    &platformv1.ModelProfileList{},
			"model providers":   &platformv1.ModelProviderList{},
			"flows":             &platformv1.FlowList{},
			"flow versions":     &platformv1.FlowVersionList{},
			"runtime profiles":  &platformv1.RuntimeProfileList{},
			"entries":           &platformv1.EntryList{},
			"published entries": &platformv1.PublishedEntryList{},
			"dashboards":        &platformv1.DashboardList{},
			"triggers":          &platformv1.TriggerList{},
			"models":            &platformv1.ModelList{},
			"tools":             &platformv1.ToolList{},
			"tool providers":    &platformv1.ToolProviderList{},
			"installed packs":   &platformv1.InstalledPackList{},
		}
		for what, list := range ready {
			Expect(k8sClient.List(ctx, list, inDefault)).To(Succeed())
			items := objects(list)
			Expect(items).NotTo(BeEmpty(), "the samples have %s", what)
			for _, obj := range items {
				expectReady(obj, metav1.ConditionTrue, platformv1.ResolvedReason)
				Expect(resourceStatus(obj).Provisioning).To(Equal(platformv1.ProvisioningProvisioned), "%s %s", what, obj.GetName())
			}
		}
		registry := &platformv1.SourceRegistry{ObjectMeta: metav1.ObjectMeta{Name: "community"}}
		expectReady(registry, metav1.ConditionTrue, platformv1.ResolvedReason)

		// The Vault is Available with the suite's master key; the Secret is Missing until its
		// value is written (through the service API in `platform serve`, through the same domain
		// service here), then Configured.
		vault := &platformv1.Vault{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "local"}}
		expectReady(vault, metav1.ConditionTrue, platformv1.ResolvedReason)
		Expect(vault.Status.Availability).To(Equal(platformv1.VaultAvailable))
		Expect(vault.Status.Provisioning).To(Equal(platformv1.ProvisioningProvisioned))
		secret := &platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "openai-api-key"}}
		expectReady(secret, metav1.ConditionFalse, platformv1.SecretValueMissingReason)
		Expect(secret.Status.State).To(Equal(platformv1.SecretMissing))
		Expect(secret.Status.Provisioning).To(Equal(platformv1.ProvisioningPending))

		values := &secrets.Service{Resolver: &secrets.Resolver{Reader: k8sClient, Tree: secrets.IdentityTree{}}, Vault: localVault}
		Expect(values.SetValue(ctx, secret, []byte("sk-sample-value"))).To(Succeed())
		expectReady(secret, metav1.ConditionTrue, platformv1.ResolvedReason)
		Expect(secret.Status.State).To(Equal(platformv1.SecretConfigured))
		Expect(secret.Status.ValueUpdatedTime).NotTo(BeNil())
		Expect(secret.Status.Provisioning).To(Equal(platformv1.ProvisioningProvisioned))

		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(published), published)).To(Succeed())
		Expect(published.Status.TargetState).To(Equal(platformv1.TargetExecutable))
		Expect(published.Definition.ResolvedTarget).To(Equal(platformv1.FlowVersionReference{Name: "direct-support-triage", Version: "1.0.0"}),
			"the Agent-bound sample Entry is published through the agent's Direct Agent Flow")
		trigger := &platformv1.Trigger{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "weekday-support-digest"}, trigger)).To(Succeed())
		Expect(trigger.Status.NextFireTime).NotTo(BeNil())
		agent := &platformv1.Agent{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "support-triage"}, agent)).To(Succeed())
		Expect(agent.Status.ResolvedModel).To(Equal(&platformv1.ResolvedModel{
			ModelProfile: "offline", Provider: "offline", ProviderType: platformv1.DeterministicProvider, Model: "deterministic",
		}), "the sample agent runs offline")
		profile := &platformv1.ModelProfile{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "default"}, profile)).To(Succeed())
		Expect(profile.Status.Model).To(Equal(&platformv1.LocalObjectReference{Name: "openai-gpt-4.1-mini"}))
	})
})

// objects are the items of a list, as pointers into it.
func objects(list client.ObjectList) []client.Object {
	GinkgoHelper()
	items, err := meta.ExtractList(list)
	Expect(err).NotTo(HaveOccurred())
	objs := make([]client.Object, 0, len(items))
	for _, item := range items {
		objs = append(objs, item.(client.Object))
	}
	return objs
}
