package provider_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/provider/openaitest"
	"platform.dev/platform/internal/config"
)

const secretKey = "sk-test-very-secret"

func TestTheOpenAIProviderSendsInstructionsAsSystemAndInputAsUser(t *testing.T) {
	g := NewWithT(t)
	srv := openaitest.New()
	defer srv.Close()
	srv.APIKey = secretKey
	c := provider.NewOpenAIClient(provider.Endpoint{Provider: "local", Type: platformv1.OpenAICompatibleProvider, BaseURL: srv.BaseURL(), APIKey: secretKey})
	temperature, maxTokens := 0.25, int64(64)
	act, err := c.Chat(context.Background(), provider.Generation{Model: "gpt-test", Temperature: &temperature, MaxOutputTokens: &maxTokens},
		"Be brief.", "hello")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(act).To(Equal(provider.Action{Type: provider.ActionRespond, Text: "echo: hello", ModelProvider: "local", Model: "gpt-test",
		Usage: &provider.Usage{InputTokens: 1, OutputTokens: 1}}))
	chats := srv.Chats()
	g.Expect(chats).To(HaveLen(1))
	g.Expect(chats[0].Authorization).To(Equal("Bearer " + secretKey))
	g.Expect(chats[0].Messages).To(Equal([]openaitest.ChatMessage{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "hello"}}))
	g.Expect(*chats[0].Temperature).To(Equal(0.25))
	g.Expect(*chats[0].MaxCompletionTokens).To(Equal(int64(64)))
}

func TestTheOpenAIProviderClassifiesEndpointFailures(t *testing.T) {
	cases := map[string]struct {
		setup     func(*openaitest.Server)
		key       string
		transient bool
		want      string
	}{
		"a 5xx is transient and names the status, not the body": {
			setup: func(s *openaitest.Server) { s.FailWith = http.StatusBadGateway }, transient: true,
			want: "model provider local: chat completion: the endpoint answered 502 Bad Gateway (server_error)",
		},
		"a 429 is transient": {
			setup: func(s *openaitest.Server) { s.FailWith = http.StatusTooManyRequests }, transient: true,
			want: "model provider local: chat completion: the endpoint answered 429 Too Many Requests (server_error)",
		},
		"a timeout is transient": {
			setup: func(s *openaitest.Server) { s.Delay = 2 * time.Second }, transient: true,
			want: "model provider local: chat completion: the endpoint did not answer within 200ms",
		},
		"an auth failure is permanent and names the setting, never the key": {
			setup: func(s *openaitest.Server) { s.APIKey = "sk-the-right-one" }, key: secretKey,
			want: "model provider local: chat completion: the endpoint answered 401 Unauthorized (invalid_api_key); check the API key, the variable AI__Providers__local__ApiKey",
		},
		"a 400 is permanent": {
			setup: func(s *openaitest.Server) { s.FailWith = http.StatusBadRequest },
			want:  "model provider local: chat completion: the endpoint answered 400 Bad Request (server_error)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			srv := openaitest.New()
			defer srv.Close()
			tc.setup(srv)
			c := provider.NewOpenAIClient(provider.Endpoint{Provider: "local", Type: platformv1.OpenAICompatibleProvider, BaseURL: srv.BaseURL(),
				APIKey: tc.key, KeySource: keySource(tc.key), Timeout: 200 * time.Millisecond})
			_, err := c.Chat(context.Background(), provider.Generation{Model: "gpt-test"}, "Be brief.", "the secret prompt")
			g.Expect(err).To(HaveOccurred())
			g.Expect(provider.IsTransient(err)).To(Equal(tc.transient))
			g.Expect(err.Error()).To(Equal(tc.want))
			g.Expect(err.Error()).NotTo(ContainSubstring("secret"))
		})
	}
}

func TestAnUnreachableEndpointIsTransient(t *testing.T) {
	g := NewWithT(t)
	srv := openaitest.New()
	base := srv.BaseURL()
	srv.Close()
	_, err := provider.NewOpenAIClient(provider.Endpoint{Provider: "gone", BaseURL: base}).Chat(context.Background(), provider.Generation{Model: "m"}, "", "hi")
	g.Expect(provider.IsTransient(err)).To(BeTrue(), "%v", err)
	var endpointErr *provider.EndpointError
	g.Expect(errors.As(err, &endpointErr)).To(BeTrue())
}

func TestModelDiscoveryListsTheEndpointsModels(t *testing.T) {
	g := NewWithT(t)
	srv := openaitest.New()
	defer srv.Close()
	srv.Models = []string{"a", "b"}
	models, err := provider.NewOpenAIClient(provider.Endpoint{Provider: "local", BaseURL: srv.BaseURL()}).Models(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(models).To(Equal([]provider.DiscoveredModel{{ID: "a", OwnedBy: "test", ContextWindowTokens: 8192}, {ID: "b", OwnedBy: "test", ContextWindowTokens: 8192}}))
}

func managedFixture(endpoint string, profile platformv1.ModelProfileDefinition) *provider.ManagedProvider {
	five := int32(5)
	if profile.Generation == nil {
		profile.Generation = &platformv1.GenerationIntent{Temperature: "0.7", MaxOutputTokens: &five}
	}
	kube := fake.NewClientBuilder().WithScheme(platformscheme.Scheme).WithObjects(
		&platformv1.ModelProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "local"},
			Definition: platformv1.ModelProviderDefinition{Type: platformv1.OpenAICompatibleProvider, Endpoint: endpoint}},
		&platformv1.ModelProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "default", UID: "profile-uid"}, Definition: profile},
	).Build()
	return &provider.ManagedProvider{Config: config.FromMap(config.Production, map[string]string{"AI:Providers:local:ApiKey": secretKey}), Client: kube}
}

func TestManagedModeResolvesEndpointModelAndSettingsFromProfileAndProvider(t *testing.T) {
	cases := map[string]struct {
		profileRef      string
		overrides       provider.Overrides
		wantTemperature float64
		wantMaxTokens   int64
	}{
		"the profile's generation settings apply":    {profileRef: "default", wantTemperature: 0.7, wantMaxTokens: 5},
		"a profile selected by resource id resolves": {profileRef: "profile-uid", wantTemperature: 0.7, wantMaxTokens: 5},
		"run overrides replace temperature and maxOutputTokens": {profileRef: "default", wantTemperature: 1.5, wantMaxTokens: 9,
			overrides: provider.Overrides{Temperature: new(1.5), MaxOutputTokens: new(int64(9))}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			srv := openaitest.New()
			defer srv.Close()
			srv.APIKey = secretKey
			m := managedFixture(srv.BaseURL(), platformv1.ModelProfileDefinition{Provider: platformv1.LocalObjectReference{Name: "local"}, ModelID: "gpt-test"})
			act, err := m.Invoke(context.Background(), provider.Request{Namespace: "ws", Attempt: 1, Message: "hi", Overrides: tc.overrides,
				Agent: provider.Agent{Name: "helper", Instructions: "Be kind.", ModelProfile: tc.profileRef}})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(act).To(Equal(provider.Action{Type: provider.ActionRespond, Text: "echo: hi", ModelProvider: "local", Model: "gpt-test",
				Usage: &provider.Usage{InputTokens: 1, OutputTokens: 1}}))
			chat := srv.Chats()[0]
			g.Expect(chat.Model).To(Equal("gpt-test"))
			g.Expect(*chat.Temperature).To(Equal(tc.wantTemperature))
			g.Expect(*chat.MaxCompletionTokens).To(Equal(tc.wantMaxTokens))
		})
	}
}

func TestManagedModeFailsPermanentlyWhenTheChainDoesNotResolve(t *testing.T) {
	cases := map[string]struct {
		agent provider.Agent
		want  string
	}{
		"no model profile": {agent: provider.Agent{Name: "a"}, want: `agent "a" selects no model profile`},
		"unknown profile":  {agent: provider.Agent{Name: "a", ModelProfile: "nope"}, want: `agent "a": model profile "nope" not found`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			m := managedFixture("http://127.0.0.1:1/v1", platformv1.ModelProfileDefinition{Provider: platformv1.LocalObjectReference{Name: "local"}})
			_, err := m.Invoke(context.Background(), provider.Request{Namespace: "ws", Attempt: 1, Agent: tc.agent})
			g.Expect(err).To(MatchError(tc.want))
			g.Expect(provider.IsTransient(err)).To(BeFalse())
		})
	}
}

// keySource is where EndpointOf says a key from the fallback variable comes from.
func keySource(key string) string {
	if key == "" {
		return ""
	}
	return "the variable " + provider.APIKeySetting("local")
}
