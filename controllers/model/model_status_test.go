package model

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func TestSetReadyCondition(t *testing.T) {
	tests := map[string]struct {
		providerFound bool
		wantStatus    metav1.ConditionStatus
		wantReason    string
		wantMessage   string
	}{
		"a model of an existing provider is Resolved": {
			providerFound: true, wantStatus: metav1.ConditionTrue, wantReason: platformv1.ResolvedReason,
			wantMessage: `model gpt-4.1-mini of ModelProvider "openai"`,
		},
		"a model without its provider is ModelProviderNotFound with the field path": {
			wantStatus: metav1.ConditionFalse, wantReason: platformv1.ModelProviderNotFoundReason,
			wantMessage: `definition.provider.name: ModelProvider "openai" not found`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			model := &platformv1.Model{ObjectMeta: metav1.ObjectMeta{Generation: 2},
				Definition: platformv1.ModelDefinition{Provider: platformv1.LocalObjectReference{Name: "openai"}, ModelID: "gpt-4.1-mini"}}
			setReadyCondition(&scope{model: model, providerFound: tt.providerFound})
			c := meta.FindStatusCondition(model.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(Equal(tt.wantMessage))
			g.Expect(c.ObservedGeneration).To(Equal(int64(2)))
		})
	}
}
