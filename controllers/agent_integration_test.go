package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/resourcenamespace"
)

// chain creates what an Agent needs in namespace: a credential Secret, a ModelProvider and a
// ModelProfile named "default" asking for gpt-4.1-mini.
func chain(namespace string) (*platformv1.ModelProfile, *platformv1.ModelProvider) {
	GinkgoHelper()
	secret := &platformv1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "openai-api-key"},
		Definition: platformv1.SecretDefinition{Vault: platformv1.VaultReference{Name: "local"}},
	}
	Expect(k8sClient.Create(ctx, secret)).To(Succeed())
	provider := newProvider(namespace)
	Expect(k8sClient.Create(ctx, provider)).To(Succeed())
	profile := newProfile(namespace)
	Expect(k8sClient.Create(ctx, profile)).To(Succeed())
	return profile, provider
}

func newProvider(namespace string) *platformv1.ModelProvider {
	return &platformv1.ModelProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "openai"},
		Definition: platformv1.ModelProviderDefinition{
			Type:       platformv1.OpenAICompatibleProvider,
			Endpoint:   "https://api.openai.com/v1",
			Credential: &platformv1.SecretReference{Name: "openai-api-key"},
		},
	}
}

func newProfile(namespace string) *platformv1.ModelProfile {
	return &platformv1.ModelProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "default"},
		Definition: platformv1.ModelProfileDefinition{Provider: platformv1.LocalObjectReference{Name: "openai"}, ModelID: "gpt-4.1-mini"},
	}
}

func newAgent(namespace, name string, ref *platformv1.ModelProfileReference) *platformv1.Agent {
	return &platformv1.Agent{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Definition: platformv1.AgentDefinition{DisplayName: "Triage", ModelProfile: ref},
	}
}

var _ = Describe("Agent", func() {
	var namespace string
	BeforeEach(func() { namespace = newWorkspace() })

	It("becomes Ready with the resolved model once its chain resolves", func() {
		profile, _ := chain(namespace)
		agent := newAgent(namespace, "triage", &platformv1.ModelProfileReference{Name: "default"})
		Expect(k8sClient.Create(ctx, agent)).To(Succeed())

		ready := expectReady(agent, metav1.ConditionTrue, platformv1.ResolvedReason)
		Expect(ready.Message).To(Equal(`calls model gpt-4.1-mini of ModelProvider "openai" (OpenAICompatible) through ModelProfile "default"`))
		Expect(agent.Status.ResolvedModel).To(Equal(&platformv1.ResolvedModel{
			ModelProfile: "default", Provider: "openai", ProviderType: platformv1.OpenAICompatibleProvider, Model: "gpt-4.1-mini",
		}))
		expectReady(profile, metav1.ConditionTrue, platformv1.ResolvedReason)
		Expect(profile.Status.ProviderType).To(Equal(platformv1.OpenAICompatibleProvider))

		By("recording the transition as an event")
		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(k8sClient.List(ctx, events, client.InNamespace(namespace))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(SatisfyAll(
				HaveField("Regarding.Name", "triage"),
				HaveField("Reason", platformv1.ResolvedReason),
				HaveField("ReportingController", "agent-controller"),
			)))
		}).Should(Succeed())
	})

	It("resolves a profile selected by resourceId", func() {
		profile, _ := chain(namespace)
		agent := newAgent(namespace, "by-id", &platformv1.ModelProfileReference{ResourceID: string(profile.UID)})
		Expect(k8sClient.Create(ctx, agent)).To(Succeed())
		expectReady(agent, metav1.ConditionTrue, platformv1.ResolvedReason)
		Expect(agent.Status.ResolvedModel.ModelProfile).To(BeEquivalentTo("default"))
	})

	It("resolves a profile of another resource namespace of its workspace, never of another workspace", func() {
		agentNamespace, err := resourcenamespace.Ensure(ctx, k8sClient, namespace, "contoso.reports")
		Expect(err).NotTo(HaveOccurred())
		agent := newAgent(agentNamespace, "packed", &platformv1.ModelProfileReference{Name: "default", Namespace: platformv1.DefaultResourceNamespace})
		Expect(k8sClient.Create(ctx, agent)).To(Succeed())
		By("another workspace's profile of that name does not count")
		chain(newWorkspace())
		ready := expectReady(agent, metav1.ConditionFalse, platformv1.ModelProfileNotFoundReason)
		Expect(ready.Message).To(Equal(`ModelProfile "default" not found in resource namespace default`))

		By("the workspace's own profile appears: the watch brings the agent in the Pack's namespace along")
		chain(namespace)
		ready = expectReady(agent, metav1.ConditionTrue, platformv1.ResolvedReason)
		Expect(ready.Message).To(ContainSubstring(`through ModelProfile "default"`))
	})

	It("is ModelProfileNotSet without a profile", func() {
		agent := newAgent(namespace, "bare", nil)
		Expect(k8sClient.Create(ctx, agent)).To(Succeed())
		expectReady(agent, metav1.ConditionFalse, platformv1.ModelProfileNotSetReason)
		Expect(agent.Status.ResolvedModel).To(BeNil())
	})

	It("is ModelProfileNotFound until the profile and its provider exist", func() {
		agent := newAgent(namespace, "waiting", &platformv1.ModelProfileReference{Name: "default"})
		Expect(k8sClient.Create(ctx, agent)).To(Succeed())
		ready := expectReady(agent, metav1.ConditionFalse, platformv1.ModelProfileNotFoundReason)
		Expect(ready.Message).To(Equal(`ModelProfile "default" not found`))

		By("creating the profile, then the provider: the watches bring the agent along")
		Expect(k8sClient.Create(ctx, newProfile(namespace))).To(Succeed())
		expectReady(agent, metav1.ConditionFalse, platformv1.ModelProviderNotFoundReason)
		provider := newProvider(namespace)
		provider.Definition.Credential = nil
		Expect(k8sClient.Create(ctx, provider)).To(Succeed())
		expectReady(agent, metav1.ConditionTrue, platformv1.ResolvedReason)
	})

	It("is not Ready once its provider is deleted, or not Ready", func() {
		_, provider := chain(namespace)
		agent := newAgent(namespace, "orphaned", &platformv1.ModelProfileReference{Name: "default"})
		Expect(k8sClient.Create(ctx, agent)).To(Succeed())
		expectReady(agent, metav1.ConditionTrue, platformv1.ResolvedReason)

		By("deleting the credential Secret: the provider, then the agent, are unavailable")
		Expect(k8sClient.Delete(ctx, &platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "openai-api-key"}})).To(Succeed())
		expectReady(provider, metav1.ConditionFalse, platformv1.SecretNotFoundReason)
		ready := expectReady(agent, metav1.ConditionFalse, platformv1.ProviderUnavailableReason)
		Expect(ready.Message).To(ContainSubstring(`Secret "openai-api-key" not found`))
		Expect(agent.Status.ResolvedModel).To(BeNil())

		By("deleting the provider: refused while the profile uses it, except to the platform (as when it deletes the workspace)")
		err := k8sClient.Delete(ctx, provider)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring(`Model provider "openai" is referenced by model profile "default"`))
		Expect(platformClient.Delete(ctx, provider)).To(Succeed())
		expectReady(agent, metav1.ConditionFalse, platformv1.ModelProviderNotFoundReason)
	})

	It("keeps its Ready transition time when a reconcile changes nothing about readiness", func() {
		chain(namespace)
		agent := newAgent(namespace, "steady", &platformv1.ModelProfileReference{Name: "default"})
		Expect(k8sClient.Create(ctx, agent)).To(Succeed())
		first := expectReady(agent, metav1.ConditionTrue, platformv1.ResolvedReason)

		By("changing the definition, which bumps the generation and reconciles again")
		update(agent, func() { agent.Definition.Description = "Sorts incoming requests" })
		Expect(agent.Generation).To(BeNumerically(">", first.ObservedGeneration))
		second := expectReady(agent, metav1.ConditionTrue, platformv1.ResolvedReason)
		Expect(second.ObservedGeneration).To(Equal(agent.Generation))
		Expect(second.LastTransitionTime).To(Equal(first.LastTransitionTime))

		By("touching the profile, which reconciles the agent without any change to write")
		resourceVersion := agent.ResourceVersion
		profile := &platformv1.ModelProfile{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "default"}}
		update(profile, func() { profile.Annotations = map[string]string{"touched": "yes"} })
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(agent), agent)).To(Succeed())
			g.Expect(agent.ResourceVersion).To(Equal(resourceVersion), "an unchanged status is not written")
		}).WithTimeout(time.Second).Should(Succeed())
	})

	It("is ToolNotFound, then ToolDisabled, until its tool is enabled", func() {
		chain(namespace)
		agent := newAgent(namespace, "with-tools", &platformv1.ModelProfileReference{Name: "default"})
		agent.Definition.Tools = []platformv1.AgentTool{{Name: "search"}}
		Expect(k8sClient.Create(ctx, agent)).To(Succeed())
		expectReady(agent, metav1.ConditionFalse, platformv1.ToolNotFoundReason)

		tool := &platformv1.Tool{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "search"},
			Definition: platformv1.ToolDefinition{Provider: platformv1.LocalObjectReference{Name: "kb"}, ToolName: "search"},
		}
		Expect(k8sClient.Create(ctx, tool)).To(Succeed())
		expectReady(agent, metav1.ConditionFalse, platformv1.ToolDisabledReason)
		update(tool, func() { tool.Definition.Enabled = true })
		expectReady(agent, metav1.ConditionTrue, platformv1.ResolvedReason)
	})
})
