package installedpack

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func TestSetReadyCondition(t *testing.T) {
	tests := map[string]struct {
		missing     []string
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		"an installation without resources is Resolved": {
			wantStatus: metav1.ConditionTrue, wantReason: platformv1.ResolvedReason, wantMessage: "acme.support-kit 1.2.0: all 0 managed resources exist",
		},
		"a missing resource is ResourceNotFound with its index": {
			missing:    []string{`status.resources[0]: Agent "triage" not found`},
			wantStatus: metav1.ConditionFalse, wantReason: platformv1.ResourceNotFoundReason, wantMessage: `status.resources[0]: Agent "triage" not found`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pack := &platformv1.InstalledPack{ObjectMeta: metav1.ObjectMeta{Generation: 1},
				Definition: platformv1.InstalledPackDefinition{Publisher: "acme", Name: "support-kit", Version: "1.2.0"}}
			setReadyCondition(&scope{pack: pack, missing: tt.missing})
			c := meta.FindStatusCondition(pack.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(Equal(tt.wantMessage))
		})
	}
}
