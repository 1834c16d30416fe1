package service_test

import (
	"context"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
)

func providerBody(name, description string) string {
	return `{"apiVersion":"platform/v1","kind":"ModelProvider","metadata":{"name":"` + name + `"},` +
		`"definition":{"type":"OpenAICompatible","endpoint":"http://127.0.0.1:11434/v1","description":"` + description + `",` +
		`"specificationOverrides":[{"modelId":"small-1","specification":{"contextWindowTokens":4096}}]}}`
}

func profileBody(name, provider, modelID string) string {
	return `{"apiVersion":"platform.dev/v1","kind":"ModelProfile","metadata":{"name":"` + name + `"},` +
		`"definition":{"provider":{"name":"` + provider + `"},"modelId":"` + modelID + `",` +
		`"generation":{"temperature":"0.2"},"providerOptions":[{"provider":"OpenAICompatible","options":{"seed":7}}]}}`
}

func agentWithProfile(name, reference string) string {
	return `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"` + name + `"},"definition":{"modelProfile":` + reference + `}}`
}

// discoverModel writes the Model that discovery would write for provider.
func discoverModel(t *testing.T, provider, modelID string) {
	t.Helper()
	ctx := context.Background()
	model := &platformv1.Model{
		ObjectMeta: metav1.ObjectMeta{Namespace: httpapi.DevelopmentWorkspace, Name: provider + "-" + modelID},
		Definition: platformv1.ModelDefinition{Provider: platformv1.LocalObjectReference{Name: platformv1.ResourceName(provider)}, ModelID: modelID},
	}
	if err := kube.Create(ctx, model); err != nil {
		t.Fatal(err)
	}
	model.Status.Availability = platformv1.ModelAvailable
	model.Status.ObservedSpecification = &platformv1.ModelSpecification{ContextWindowTokens: ptr.To[int64](2048), ToolCalling: ptr.To(true)}
	if err := kube.Status().Update(ctx, model); err != nil {
		t.Fatal(err)
	}
}

func TestModelProvidersModelsAndProfiles(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	ctx := context.Background()

	created := call(t, server, http.MethodPost, "/api/modelproviders", providerBody("local-llm", "First"))
	g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
	g.Expect(created.body).To(HaveKeyWithValue("apiVersion", "platform/v1"))
	read := call(t, server, http.MethodGet, "/api/modelproviders/local-llm", "")
	g.Expect(read.header.Get("ETag")).To(Equal(created.header.Get("ETag")))
	g.Expect(call(t, server, http.MethodGet, "/api/modelproviders", "").body["items"]).To(ContainElement(HaveKeyWithValue("metadata", HaveKeyWithValue("name", "local-llm"))))

	provider := &platformv1.ModelProvider{}
	g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: httpapi.DevelopmentWorkspace, Name: "local-llm"}, provider)).To(Succeed())
	provider.Status.Models = 1
	provider.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Resolved", LastTransitionTime: metav1.Now()}}
	g.Expect(kube.Status().Update(ctx, provider)).To(Succeed())
	status := call(t, server, http.MethodGet, "/api/modelproviders/local-llm/status", "")
	g.Expect(status.status).To(Equal(http.StatusOK), "%v", status.body)
	g.Expect(status.body).To(And(HaveKeyWithValue("models", BeNumerically("==", 1)), HaveKeyWithValue("conditions", ContainElement(HaveKeyWithValue("reason", "Resolved")))))

	discoverModel(t, "local-llm", "small-1")
	models := call(t, server, http.MethodGet, "/api/modelproviders/local-llm/models", "")
	g.Expect(models.status).To(Equal(http.StatusOK), "%v", models.body)
	g.Expect(models.body["items"]).To(HaveExactElements(And(
		HaveKeyWithValue("definition", HaveKeyWithValue("modelId", "small-1")),
		HaveKeyWithValue("status", And(
			HaveKeyWithValue("availability", "Available"),
			HaveKeyWithValue("observedSpecification", HaveKeyWithValue("contextWindowTokens", BeNumerically("==", 2048))),
			HaveKeyWithValue("overrideSpecification", HaveKeyWithValue("contextWindowTokens", BeNumerically("==", 4096))),
		)),
	)))
	inventory := call(t, server, http.MethodGet, "/api/models", "")
	g.Expect(inventory.body["items"]).To(ContainElement(HaveKeyWithValue("metadata", HaveKeyWithValue("name", "local-llm-small-1"))))

	profile := call(t, server, http.MethodPost, "/api/modelprofiles", profileBody("precise", "local-llm", "small-1"))
	g.Expect(profile.status).To(Equal(http.StatusCreated), "%v", profile.body)
	g.Expect(profile.body["definition"]).To(HaveKeyWithValue("providerOptions", ContainElement(HaveKeyWithValue("options", HaveKeyWithValue("seed", BeNumerically("==", 7))))))
	uid := profile.body["metadata"].(map[string]any)["uid"].(string)
	g.Expect(call(t, server, http.MethodGet, "/api/modelprofiles", "").body["items"]).To(ContainElement(HaveKeyWithValue("metadata", HaveKeyWithValue("name", "precise"))))
	g.Expect(call(t, server, http.MethodPost, "/api/agents", agentWithProfile("by-name", `{"name":"precise"}`)).status).To(Equal(http.StatusCreated))
	g.Expect(call(t, server, http.MethodPost, "/api/agents", agentWithProfile("by-id", `{"resourceId":"`+uid+`"}`)).status).To(Equal(http.StatusCreated))

	resolution := call(t, server, http.MethodGet, "/api/modelprofiles/precise/resolution", "")
	g.Expect(resolution.status).To(Equal(http.StatusOK), "%v", resolution.body)
	g.Expect(resolution.body).To(And(HaveKeyWithValue("resolved", true), HaveKeyWithValue("modelId", "small-1"),
		HaveKeyWithValue("modelProvider", And(HaveKeyWithValue("name", "local-llm"), HaveKeyWithValue("type", "OpenAICompatible"))),
		HaveKeyWithValue("model", HaveKeyWithValue("name", "local-llm-small-1"))))

	profileUsages := call(t, server, http.MethodGet, "/api/modelprofiles/precise/usages", "")
	g.Expect(profileUsages.body["items"]).To(ConsistOf(
		And(HaveKeyWithValue("kind", "Agent"), HaveKeyWithValue("name", "by-name"), HaveKeyWithValue("reference", "name")),
		And(HaveKeyWithValue("kind", "Agent"), HaveKeyWithValue("name", "by-id"), HaveKeyWithValue("reference", "resourceId")),
	))
	providerUsages := call(t, server, http.MethodGet, "/api/modelproviders/local-llm/usages", "")
	g.Expect(providerUsages.body["items"]).To(ConsistOf(
		And(HaveKeyWithValue("kind", "ModelProfile"), HaveKeyWithValue("name", "precise")),
		And(HaveKeyWithValue("kind", "Agent"), HaveKeyWithValue("name", "by-name"), HaveKeyWithValue("through", "precise")),
		And(HaveKeyWithValue("kind", "Agent"), HaveKeyWithValue("name", "by-id"), HaveKeyWithValue("through", "precise")),
	))

	providerETag := call(t, server, http.MethodGet, "/api/modelproviders/local-llm", "").header.Get("ETag")
	refused := call(t, server, http.MethodDelete, "/api/modelproviders/local-llm", "", "If-Match", providerETag)
	expectProblem(g, refused, http.StatusConflict)
	g.Expect(refused.body["detail"]).To(Equal(`Model provider "local-llm" is referenced by model profile "precise"`))

	// Deleting the profile frees the provider.
	replacedProfile := expectWritesNeedTheCurrentETag(t, server, "/api/modelprofiles/precise", profile.header.Get("ETag"), profileBody("precise", "local-llm", "small-2"))
	g.Expect(replacedProfile.body["definition"]).To(HaveKeyWithValue("modelId", "small-2"))
	replaced := expectWritesNeedTheCurrentETag(t, server, "/api/modelproviders/local-llm", providerETag, providerBody("local-llm", "Second"))
	g.Expect(replaced.body["definition"]).To(HaveKeyWithValue("description", "Second"))
	expectProblem(g, call(t, server, http.MethodGet, "/api/modelproviders/local-llm/models", ""), http.StatusNotFound)
	g.Expect(call(t, server, http.MethodGet, "/api/models", "").body["items"]).NotTo(ContainElement(HaveKeyWithValue("metadata", HaveKeyWithValue("name", "local-llm-small-1"))),
		"a provider's models go with it")
}

func TestTheModelOfAnAgentAndItsDeployment(t *testing.T) {
	g := NewWithT(t)
	server := devServer(t)
	ctx := context.Background()
	g.Expect(call(t, server, http.MethodPost, "/api/modelproviders", providerBody("chain-llm", "Chain")).status).To(Equal(http.StatusCreated))
	g.Expect(call(t, server, http.MethodPost, "/api/modelprofiles", profileBody("chain-profile", "chain-llm", "small-1")).status).To(Equal(http.StatusCreated))
	g.Expect(call(t, server, http.MethodPost, "/api/modelprofiles", profileBody("orphan-profile", "no-such-llm", "")).status).To(Equal(http.StatusCreated))
	g.Expect(call(t, server, http.MethodPost, "/api/agents", agentWithProfile("chained", `{"name":"chain-profile"}`)).status).To(Equal(http.StatusCreated))
	g.Expect(call(t, server, http.MethodPost, "/api/agents", agentWithProfile("orphaned", `{"name":"orphan-profile"}`)).status).To(Equal(http.StatusCreated))
	g.Expect(call(t, server, http.MethodPost, "/api/agents", agentWithProfile("dangling", `{"resourceId":"no-such-uid"}`)).status).To(Equal(http.StatusCreated))

	agent := &platformv1.Agent{}
	g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: httpapi.DevelopmentWorkspace, Name: "chained"}, agent)).To(Succeed())
	agent.Status.ObservedGeneration = agent.Generation
	agent.Status.Provisioning = platformv1.ProvisioningProvisioned
	agent.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Resolved", LastTransitionTime: metav1.Now()}}
	g.Expect(kube.Status().Update(ctx, agent)).To(Succeed())

	model := call(t, server, http.MethodGet, "/api/agents/chained/model", "")
	g.Expect(model.status).To(Equal(http.StatusOK), "%v", model.body)
	g.Expect(model.body).To(And(HaveKeyWithValue("agent", "chained"), HaveKeyWithValue("resolved", true), HaveKeyWithValue("modelId", "small-1"),
		HaveKeyWithValue("modelProfile", HaveKeyWithValue("name", "chain-profile")),
		HaveKeyWithValue("modelProvider", And(HaveKeyWithValue("name", "chain-llm"), HaveKeyWithValue("type", "OpenAICompatible"))),
		HaveKeyWithValue("ready", HaveKeyWithValue("status", "True"))))
	g.Expect(model.body).NotTo(HaveKey("model"), "small-1 was not discovered at chain-llm")

	cases := map[string]struct {
		agent, reason string
	}{
		"the profile's provider is missing": {"orphaned", "ModelProviderNotFound"},
		"no profile has the resourceId":     {"dangling", "ModelProfileNotFound"},
		"the agent selects no profile":      {"no-profile", "ModelProfileNotFound"},
	}
	g.Expect(call(t, server, http.MethodPost, "/api/agents", agentBody("no-profile", "No profile")).status).To(Equal(http.StatusCreated))
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := call(t, server, http.MethodGet, "/api/agents/"+tc.agent+"/model", "")
			g.Expect(r.status).To(Equal(http.StatusOK), "a broken chain is an answer, not an error: %v", r.body)
			g.Expect(r.body).To(And(HaveKeyWithValue("resolved", false), HaveKeyWithValue("reason", tc.reason), HaveKeyWithValue("message", Not(BeEmpty()))))
		})
	}
	expectProblem(g, call(t, server, http.MethodGet, "/api/agents/no-such-agent/model", ""), http.StatusNotFound)

	deployment := call(t, server, http.MethodGet, "/api/deployments/chained", "")
	g.Expect(deployment.status).To(Equal(http.StatusOK), "%v", deployment.body)
	g.Expect(deployment.body).To(And(HaveKeyWithValue("name", "chained"), HaveKeyWithValue("ready", true), HaveKeyWithValue("provisioning", "Provisioned"),
		HaveKeyWithValue("generation", BeNumerically("==", agent.Generation)), HaveKeyWithValue("observedGeneration", BeNumerically("==", agent.Generation)),
		HaveKeyWithValue("model", And(HaveKeyWithValue("resolved", true), HaveKeyWithValue("modelId", "small-1")))))
	notReady := call(t, server, http.MethodGet, "/api/deployments/orphaned", "")
	g.Expect(notReady.body).To(And(HaveKeyWithValue("ready", false), HaveKeyWithValue("model", HaveKeyWithValue("reason", "ModelProviderNotFound"))))
	expectProblem(g, call(t, server, http.MethodGet, "/api/deployments/no-such-agent", ""), http.StatusNotFound)
}
