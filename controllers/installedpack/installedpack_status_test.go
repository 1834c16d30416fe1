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
		status      platformv1.InstalledPackStatus
		missing     []string
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		"an installation without resources is Resolved": {
			status:     platformv1.InstalledPackStatus{InstalledVersion: "1.2.0"},
			wantStatus: metav1.ConditionTrue, wantReason: platformv1.ResolvedReason, wantMessage: "acme.support-kit 1.2.0: all 0 managed resources exist",
		},
		"a missing resource is ResourceNotFound with its index": {
			missing:    []string{`status.resources[0]: Agent "triage" not found`},
			wantStatus: metav1.ConditionFalse, wantReason: platformv1.ResourceNotFoundReason, wantMessage: `status.resources[0]: Agent "triage" not found`,
		},
		"an operation under way says how far it got": {
			status: platformv1.InstalledPackStatus{Operation: &platformv1.PackOperation{Kind: platformv1.PackOperationInstall, Phase: platformv1.PackApplying,
				Steps: []platformv1.PackOperationStep{{Kind: "Agent", Name: "a", Done: true}, {Kind: "Flow", Name: "f"}}}},
			wantStatus: metav1.ConditionFalse, wantReason: platformv1.ReconcilingReason, wantMessage: "Install applying: 1 of 2 steps done",
		},
		"a failed operation names the failing resource and the reason": {
			status: platformv1.InstalledPackStatus{Operation: &platformv1.PackOperation{Kind: platformv1.PackOperationUpdate, ToVersion: "1.1.0",
				Phase: platformv1.PackOperationFailed, FailedResource: "Flow/f", Error: "admission refused it"}},
			wantStatus: metav1.ConditionFalse, wantReason: platformv1.InstallFailedReason, wantMessage: "Update of 1.1.0 failed: Flow/f: admission refused it",
		},
		"a degraded uninstall lists what it preserved and says that the Pack's namespace stays with it": {
			status: platformv1.InstalledPackStatus{State: platformv1.PackDegraded,
				Preserved: []platformv1.PreservedResource{{Kind: "Agent", Name: "a", Reason: "modified since installed"}}},
			wantStatus: metav1.ConditionFalse, wantReason: platformv1.ResourcesPreservedReason, wantMessage: "uninstall preserved Agent a (modified since installed); the namespace acme.support-kit stays with them",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pack := &platformv1.InstalledPack{ObjectMeta: metav1.ObjectMeta{Generation: 1},
				Definition: platformv1.InstalledPackDefinition{Publisher: "acme", Name: "support-kit", Version: "1.2.0"}, Status: tt.status}
			setReadyCondition(pack, tt.missing)
			c := meta.FindStatusCondition(pack.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(Equal(tt.wantMessage))
		})
	}
}
