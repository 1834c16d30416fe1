package modelprofile

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func newProfile(modelID string) *platformv1.ModelProfile {
	p := &platformv1.ModelProfile{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ws", Generation: 2}}
	p.Definition.Provider.Name = "openai"
	p.Definition.ModelID = modelID
	return p
}

func newProvider(status metav1.ConditionStatus, reason string) *platformv1.ModelProvider {
	p := &platformv1.ModelProvider{ObjectMeta: metav1.ObjectMeta{Name: "openai", Namespace: "ws"}}
	p.Definition.Type = platformv1.OpenAICompatibleProvider
	if status != "" {
		p.Status.Conditions = []metav1.Condition{{Type: platformv1.ReadyCondition, Status: status, Reason: reason}}
	}
	return p
}

func TestSetReadyCondition(t *testing.T) {
	tests := map[string]struct {
		scope       scope
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		"a missing provider is ModelProviderNotFound": {
			scope:       scope{profile: newProfile("gpt-4.1-mini")},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.ModelProviderNotFoundReason,
			wantMessage: `ModelProvider "openai" not found`,
		},
		"a provider that is not Ready is ProviderUnavailable": {
			scope:       scope{profile: newProfile("gpt-4.1-mini"), provider: newProvider(metav1.ConditionFalse, platformv1.SecretNotFoundReason)},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.ProviderUnavailableReason,
			wantMessage: `ModelProvider "openai" is not Ready (SecretNotFound)`,
		},
		"a provider that has not reported yet is ProviderUnavailable": {
			scope:       scope{profile: newProfile("gpt-4.1-mini"), provider: newProvider("", "")},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.ProviderUnavailableReason,
			wantMessage: "has not reported Ready yet",
		},
		"a Ready provider is Resolved": {
			scope:       scope{profile: newProfile("gpt-4.1-mini"), provider: newProvider(metav1.ConditionTrue, platformv1.ResolvedReason)},
			wantStatus:  metav1.ConditionTrue,
			wantReason:  platformv1.ResolvedReason,
			wantMessage: `model gpt-4.1-mini of ModelProvider "openai" (OpenAICompatible)`,
		},
		"a profile without modelId uses the provider's default model": {
			scope:       scope{profile: newProfile(""), provider: newProvider(metav1.ConditionTrue, platformv1.ResolvedReason)},
			wantStatus:  metav1.ConditionTrue,
			wantReason:  platformv1.ResolvedReason,
			wantMessage: "the default model",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			setReadyCondition(&tt.scope)
			c := meta.FindStatusCondition(tt.scope.profile.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(ContainSubstring(tt.wantMessage))
			g.Expect(c.ObservedGeneration).To(Equal(int64(2)))
		})
	}
}

func TestSetReferences(t *testing.T) {
	model := &platformv1.Model{ObjectMeta: metav1.ObjectMeta{Name: "openai-gpt-4.1-mini"}}
	tests := map[string]struct {
		scope            scope
		wantProviderType platformv1.ModelProviderType
		wantModel        *platformv1.LocalObjectReference
	}{
		"an existing provider reports its type": {
			scope:            scope{profile: newProfile("gpt-4.1-mini"), provider: newProvider("", "")},
			wantProviderType: platformv1.OpenAICompatibleProvider,
		},
		"a discovered model is reported": {
			scope:            scope{profile: newProfile("gpt-4.1-mini"), provider: newProvider("", ""), model: model},
			wantProviderType: platformv1.OpenAICompatibleProvider,
			wantModel:        &platformv1.LocalObjectReference{Name: "openai-gpt-4.1-mini"},
		},
		"a missing provider clears what was reported": {
			scope: scope{profile: newProfile("gpt-4.1-mini")},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			tt.scope.profile.Status.ProviderType = platformv1.OllamaProvider
			tt.scope.profile.Status.Model = &platformv1.LocalObjectReference{Name: "stale"}
			setReferences(&tt.scope)
			g.Expect(tt.scope.profile.Status.ProviderType).To(Equal(tt.wantProviderType))
			g.Expect(tt.scope.profile.Status.Model).To(Equal(tt.wantModel))
		})
	}
}
