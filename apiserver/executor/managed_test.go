package executor_test

import (
	"context"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/provider/openaitest"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/internal/config"
)

// managedHarness is a harness whose agents run in Managed mode against an OpenAI-compatible
// test server, through a ModelProfile and a ModelProvider of the run's workspace.
func managedHarness(t *testing.T, s *store.Store, srv *openaitest.Server, pricing ...platformv1.ModelPricing) *harness {
	h := newHarness(t, s)
	h.resolver.agents["assistant"] = provider.Agent{Name: "assistant", Revision: "1", Instructions: "Answer briefly.", ModelProfile: "default"}
	mp := &platformv1.ModelProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ctxA.Namespace, Name: "local"},
		Definition: platformv1.ModelProviderDefinition{Type: platformv1.OpenAICompatibleProvider, Endpoint: srv.BaseURL()}}
	for i := range pricing {
		mp.Definition.Pricing = &pricing[i]
	}
	kube := fake.NewClientBuilder().WithScheme(platformscheme.Scheme).WithObjects(mp,
		&platformv1.ModelProfile{ObjectMeta: metav1.ObjectMeta{Namespace: ctxA.Namespace, Name: "default"},
			Definition: platformv1.ModelProfileDefinition{Provider: platformv1.LocalObjectReference{Name: "local"}, ModelID: "gpt-test"}},
	).Build()
	h.provider.Provider = &provider.ManagedProvider{Client: kube,
		Config: config.FromMap(config.Production, map[string]string{"AI:Providers:local:ApiKey": "sk-managed"})}
	return h
}

func assistantFlow() platformv1.FlowDefinition {
	return orchestration([]platformv1.FlowStep{input, agentStep("ask", "assistant"), output}, edge("in", "ask"), edge("ask", "out"))
}

func TestAFlowRunsEndToEndInManagedModeThroughTheAgentsModelProfile(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		srv := openaitest.New()
		defer srv.Close()
		srv.APIKey = "sk-managed"
		h := managedHarness(t, s, srv)
		run, _ := h.submit(t, "assist", assistantFlow())
		h.settle(t)

		run = h.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateCompleted), run.Reason)
		out := result(g, run)["output"].(map[string]any)
		g.Expect(out["action"]).To(Equal(provider.ActionRespond))
		g.Expect(out["text"]).To(HavePrefix("echo: "))
		chats := srv.Chats()
		g.Expect(chats).To(HaveLen(1))
		g.Expect(chats[0].Model).To(Equal("gpt-test"))
		g.Expect(chats[0].Messages[0]).To(Equal(openaitest.ChatMessage{Role: "system", Content: "Answer briefly."}))
	})
}

func TestAManagedAgentStepRetriesEndpoint5xxAndThenFailsWithAReadableReason(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		srv := openaitest.New()
		defer srv.Close()
		srv.FailWith = http.StatusServiceUnavailable
		h := managedHarness(t, s, srv)
		run, _ := h.submit(t, "assist", assistantFlow())
		h.settle(t)

		run = h.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateFailed))
		g.Expect(run.Reason).To(ContainSubstring("the endpoint answered 503 Service Unavailable"))
		g.Expect(run.Reason).NotTo(ContainSubstring("upstream failed while reading the prompt"), "never the endpoint's body")
		g.Expect(len(srv.Chats())).To(BeNumerically(">", 1), "retried")
	})
}

func TestAManagedAgentStepRecoversWhenTheEndpointRecoversWithinTheRetries(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		srv := openaitest.New()
		defer srv.Close()
		srv.FailWith, srv.FailTimes = http.StatusBadGateway, 1
		h := managedHarness(t, s, srv)
		run, _ := h.submit(t, "assist", assistantFlow())
		h.settle(t)

		run = h.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateCompleted), run.Reason)
		g.Expect(srv.Chats()).To(HaveLen(2))
	})
}

func TestARuntimeRunsOverridesReplaceTheProfilesTemperatureAndMaxOutputTokens(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		srv := openaitest.New()
		defer srv.Close()
		srv.APIKey = "sk-managed"
		h := managedHarness(t, s, srv)
		temperature, maxTokens := 0.3, int64(12)
		r, err := h.work.CreateRuntimeRun(context.Background(), work.RuntimeRun{Context: ctxA, AgentName: "assistant",
			Messages: []work.Message{{Role: "user", Content: "hello"}}, Mode: "async",
			Overrides: work.RuntimeOverrides{Temperature: &temperature, MaxOutputTokens: &maxTokens}})
		g.Expect(err).NotTo(HaveOccurred())
		worked, err := h.exec.RunRuntimeOnce(context.Background(), "test-worker")
		g.Expect(worked, err).To(BeTrue())

		r, err = h.work.RuntimeRun(context.Background(), ctxA.WorkspaceID, r.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r.Status).To(Equal(work.RuntimeCompleted), r.Error)
		g.Expect(r.ModelProvider).To(Equal("local"))
		g.Expect(r.ResolvedModel).To(Equal("gpt-test"))
		g.Expect(string(r.Response)).To(MatchJSON(`{"action":"respond","content":"echo: hello"}`))
		chat := srv.Chats()[0]
		g.Expect(*chat.Temperature).To(Equal(0.3))
		g.Expect(*chat.MaxCompletionTokens).To(Equal(int64(12)))
	})
}
