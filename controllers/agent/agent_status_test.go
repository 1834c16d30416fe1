package agent

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func ready(status metav1.ConditionStatus, reason, message string) []metav1.Condition {
	return []metav1.Condition{{Type: platformv1.ReadyCondition, Status: status, Reason: reason, Message: message}}
}

func newAgent(ref *platformv1.ModelProfileReference, tools ...string) *platformv1.Agent {
	a := &platformv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "triage", Namespace: "ws", Generation: 3}}
	a.Definition.ModelProfile = ref
	for _, t := range tools {
		a.Definition.Tools = append(a.Definition.Tools, platformv1.AgentTool{Name: t})
	}
	return a
}

func newProfile(modelID string, conditions []metav1.Condition) *platformv1.ModelProfile {
	p := &platformv1.ModelProfile{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ws", UID: "0c1d"}}
	p.Definition.Provider.Name = "openai"
	p.Definition.ModelID = modelID
	p.Status.Conditions = conditions
	return p
}

func newProvider(conditions []metav1.Condition) *platformv1.ModelProvider {
	p := &platformv1.ModelProvider{ObjectMeta: metav1.ObjectMeta{Name: "openai", Namespace: "ws"}}
	p.Definition.Type = platformv1.OpenAICompatibleProvider
	p.Status.Conditions = conditions
	return p
}

func TestSetReadyCondition(t *testing.T) {
	byName := &platformv1.ModelProfileReference{Name: "default"}
	byID := &platformv1.ModelProfileReference{ResourceID: "0c1d"}
	readyTrue := ready(metav1.ConditionTrue, platformv1.ResolvedReason, "ok")

	tests := map[string]struct {
		scope        scope
		wantStatus   metav1.ConditionStatus
		wantReason   string
		wantMessage  string
		wantResolved *platformv1.ResolvedModel
	}{
		"an agent without modelProfile is ModelProfileNotSet": {
			scope:       scope{agent: newAgent(nil)},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.ModelProfileNotSetReason,
			wantMessage: "definition.modelProfile",
		},
		"a profile named but missing is ModelProfileNotFound": {
			scope:       scope{agent: newAgent(byName)},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.ModelProfileNotFoundReason,
			wantMessage: `ModelProfile "default" not found`,
		},
		"a profile selected by resourceId but missing is ModelProfileNotFound": {
			scope:       scope{agent: newAgent(byID)},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.ModelProfileNotFoundReason,
			wantMessage: `resourceId "0c1d"`,
		},
		"a profile whose provider is missing is ModelProviderNotFound": {
			scope:       scope{agent: newAgent(byName), profile: newProfile("gpt-4.1-mini", readyTrue)},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.ModelProviderNotFoundReason,
			wantMessage: `ModelProvider "openai" of ModelProfile "default" not found`,
		},
		"a provider that is not Ready is ProviderUnavailable with its reason": {
			scope: scope{agent: newAgent(byName), profile: newProfile("gpt-4.1-mini", readyTrue),
				provider: newProvider(ready(metav1.ConditionFalse, platformv1.SecretNotFoundReason, `Secret "key" not found`))},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.ProviderUnavailableReason,
			wantMessage: `ModelProvider "openai" is not Ready (SecretNotFound): Secret "key" not found`,
		},
		"a provider that has not reported yet is ProviderUnavailable": {
			scope:       scope{agent: newAgent(byName), profile: newProfile("gpt-4.1-mini", readyTrue), provider: newProvider(nil)},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.ProviderUnavailableReason,
			wantMessage: "has not reported Ready yet",
		},
		"a profile that is not Ready is ModelProfileNotReady": {
			scope: scope{agent: newAgent(byName), provider: newProvider(readyTrue),
				profile: newProfile("gpt-4.1-mini", ready(metav1.ConditionFalse, platformv1.ProviderUnavailableReason, "provider down"))},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.ModelProfileNotReadyReason,
			wantMessage: `ModelProfile "default" is not Ready (ProviderUnavailable): provider down`,
		},
		"a missing tool is ToolNotFound": {
			scope: scope{agent: newAgent(byName, "search", "mail"), profile: newProfile("m", readyTrue), provider: newProvider(readyTrue),
				missingTools: []string{"search"}, disabledTools: []string{"mail"}},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.ToolNotFoundReason,
			wantMessage: "tools not found: search",
		},
		"a disabled tool is ToolDisabled": {
			scope: scope{agent: newAgent(byName, "mail"), profile: newProfile("m", readyTrue), provider: newProvider(readyTrue),
				disabledTools: []string{"mail"}},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  platformv1.ToolDisabledReason,
			wantMessage: "tools not enabled: mail",
		},
		"a complete chain is Resolved with the resolved model": {
			scope:       scope{agent: newAgent(byName), profile: newProfile("gpt-4.1-mini", readyTrue), provider: newProvider(readyTrue)},
			wantStatus:  metav1.ConditionTrue,
			wantReason:  platformv1.ResolvedReason,
			wantMessage: `calls model gpt-4.1-mini of ModelProvider "openai" (OpenAICompatible) through ModelProfile "default"`,
			wantResolved: &platformv1.ResolvedModel{ModelProfile: "default", Provider: "openai",
				ProviderType: platformv1.OpenAICompatibleProvider, Model: "gpt-4.1-mini"},
		},
		"a profile selected by resourceId resolves to the profile's name": {
			scope:        scope{agent: newAgent(byID), profile: newProfile("", readyTrue), provider: newProvider(readyTrue)},
			wantStatus:   metav1.ConditionTrue,
			wantReason:   platformv1.ResolvedReason,
			wantMessage:  "the default model",
			wantResolved: &platformv1.ResolvedModel{ModelProfile: "default", Provider: "openai", ProviderType: platformv1.OpenAICompatibleProvider},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := tt.scope
			// A resolved model left from an earlier reconcile goes away when the chain breaks.
			s.agent.Status.ResolvedModel = &platformv1.ResolvedModel{ModelProfile: "old", Provider: "old", ProviderType: platformv1.OllamaProvider}
			setReadyCondition(&s)
			c := meta.FindStatusCondition(s.agent.Status.Conditions, platformv1.AgentReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(ContainSubstring(tt.wantMessage))
			g.Expect(c.Message).NotTo(ContainSubstring("\n"))
			g.Expect(c.ObservedGeneration).To(Equal(s.agent.Generation))
			g.Expect(s.agent.Status.ResolvedModel).To(Equal(tt.wantResolved))
		})
	}
}

func TestSetReadyConditionKeepsTheTransitionTime(t *testing.T) {
	tests := map[string]struct {
		before     metav1.ConditionStatus
		scope      scope
		wantMoved  bool
		wantReason string
	}{
		"the same status with another reason keeps the transition time": {
			before:     metav1.ConditionFalse,
			scope:      scope{agent: newAgent(&platformv1.ModelProfileReference{Name: "default"})},
			wantReason: platformv1.ModelProfileNotFoundReason,
		},
		"a changed status moves the transition time": {
			before: metav1.ConditionTrue,
			scope:  scope{agent: newAgent(nil)}, wantMoved: true,
			wantReason: platformv1.ModelProfileNotSetReason,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			long := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
			s := tt.scope
			s.agent.Status.Conditions = []metav1.Condition{{Type: platformv1.AgentReadyCondition, Status: tt.before,
				Reason: "Earlier", Message: "earlier", LastTransitionTime: long}}
			setReadyCondition(&s)
			setReadyCondition(&s)
			c := meta.FindStatusCondition(s.agent.Status.Conditions, platformv1.AgentReadyCondition)
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.LastTransitionTime.Equal(&long)).To(Equal(!tt.wantMoved))
		})
	}
}

func TestProfileLagsBehindProvider(t *testing.T) {
	readyTrue := ready(metav1.ConditionTrue, platformv1.ResolvedReason, "")
	tests := map[string]struct {
		profile  []metav1.Condition
		provider []metav1.Condition
		want     bool
	}{
		"a profile blaming a Ready provider lags behind": {
			profile:  ready(metav1.ConditionFalse, platformv1.ProviderUnavailableReason, ""),
			provider: readyTrue, want: true,
		},
		"a profile that has not found a provider that exists lags behind": {
			profile:  ready(metav1.ConditionFalse, platformv1.ModelProviderNotFoundReason, ""),
			provider: readyTrue, want: true,
		},
		"a profile blaming a provider that is not Ready is right": {
			profile:  ready(metav1.ConditionFalse, platformv1.ProviderUnavailableReason, ""),
			provider: ready(metav1.ConditionFalse, platformv1.SecretNotFoundReason, ""),
		},
		"a profile not Ready for its own reason is right": {
			profile:  ready(metav1.ConditionFalse, platformv1.ModelNotFoundReason, ""),
			provider: readyTrue,
		},
		"a Ready profile does not lag": {
			profile: readyTrue, provider: readyTrue,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(profileLagsBehindProvider(newProfile("m", tt.profile), newProvider(tt.provider))).To(Equal(tt.want))
		})
	}
}
