package admission

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiadmission "k8s.io/apiserver/pkg/admission"
)

func TestAWorkspacesBudgetAnnotationsAreTokensOrAnAmountWithItsCurrency(t *testing.T) {
	for name, tc := range map[string]struct {
		annotations map[string]string
		invalid     string
	}{
		"tokens and a cost are accepted": {annotations: map[string]string{"platform/budget-tokens-per-day": "1000", "platform/budget-cost-per-month": "5.00 USD"}},
		"0 is no budget":                 {annotations: map[string]string{"platform/budget-tokens-per-week": "0"}},
		"tokens are a whole number":      {annotations: map[string]string{"platform/budget-tokens-per-day": "1k"}, invalid: "metadata.annotations[platform/budget-tokens-per-day]"},
		"a cost names its currency":      {annotations: map[string]string{"platform/budget-cost-per-week": "5.00"}, invalid: "metadata.annotations[platform/budget-cost-per-week]"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("v1")
			u.SetKind("Namespace")
			u.SetName("acme")
			u.SetAnnotations(tc.annotations)
			gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
			a := apiadmission.NewAttributesRecord(u, nil, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", "acme", gvr, "",
				apiadmission.Create, nil, false, administrator)
			err := New().Validate(context.Background(), a, nil)
			if tc.invalid == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.invalid))
		})
	}
}
