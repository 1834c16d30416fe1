package modelprovider

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/secrets"
)

func TestValidateDefinition(t *testing.T) {
	tests := map[string]struct {
		def       platformv1.ModelProviderDefinition
		wantField string
	}{
		"an OpenAICompatible provider needs an endpoint": {
			def:       platformv1.ModelProviderDefinition{Type: platformv1.OpenAICompatibleProvider},
			wantField: "definition.endpoint",
		},
		"an Ollama provider needs an endpoint": {
			def:       platformv1.ModelProviderDefinition{Type: platformv1.OllamaProvider},
			wantField: "definition.endpoint",
		},
		"the Deterministic provider needs no endpoint": {
			def: platformv1.ModelProviderDefinition{Type: platformv1.DeterministicProvider},
		},
		"an endpoint is an absolute http or https URL": {
			def:       platformv1.ModelProviderDefinition{Type: platformv1.OllamaProvider, Endpoint: "ftp://models.example.com"},
			wantField: "definition.endpoint",
		},
		"a relative endpoint is refused": {
			def:       platformv1.ModelProviderDefinition{Type: platformv1.AzureOpenAIProvider, Endpoint: "/v1"},
			wantField: "definition.endpoint",
		},
		"an https endpoint is accepted": {
			def: platformv1.ModelProviderDefinition{Type: platformv1.OpenAICompatibleProvider, Endpoint: "https://api.openai.com/v1"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			errs := validateDefinition(&tt.def, field.NewPath("definition"))
			if tt.wantField == "" {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(errs).To(HaveLen(1))
			g.Expect(errs[0].Field).To(Equal(tt.wantField))
		})
	}
}

func TestSetReadyCondition(t *testing.T) {
	provider := func() *platformv1.ModelProvider {
		return &platformv1.ModelProvider{
			ObjectMeta: metav1.ObjectMeta{Name: "openai", Generation: 4},
			Definition: platformv1.ModelProviderDefinition{Type: platformv1.OpenAICompatibleProvider, Endpoint: "https://api.openai.com/v1",
				Credential: &platformv1.SecretReference{Name: "openai-api-key"}},
		}
	}
	tests := map[string]struct {
		scope       scope
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		"an invalid definition is InvalidDefinition with the field path": {
			scope:       scope{provider: provider(), invalid: field.ErrorList{field.Required(field.NewPath("definition", "endpoint"), "a provider needs an endpoint")}},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.InvalidDefinitionReason,
			wantMessage: "definition.endpoint: a provider needs an endpoint",
		},
		"a credential that does not resolve reports the Resolver's reason and message": {
			scope: scope{provider: provider(), credentialRefusal: &secrets.Refusal{Reason: platformv1.UseNotGrantedReason,
				Message: `definition.credential: Secret "openai-api-key" of /instance grants no use to /workspaces/ws (definition.usePolicy.grants)`}},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.UseNotGrantedReason,
			wantMessage: `definition.credential: Secret "openai-api-key" of /instance grants no use to /workspaces/ws (definition.usePolicy.grants)`,
		},
		"a complete definition is Resolved without contacting the provider": {
			scope:       scope{provider: provider()},
			wantStatus:  metav1.ConditionTrue,
			wantReason:  platformv1.ResolvedReason,
			wantMessage: `OpenAICompatible provider at https://api.openai.com/v1 with credential Secret "openai-api-key"; connectivity is not checked`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			setReadyCondition(&tt.scope)
			c := meta.FindStatusCondition(tt.scope.provider.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(Equal(tt.wantMessage))
			g.Expect(c.ObservedGeneration).To(Equal(int64(4)))
		})
	}
}
