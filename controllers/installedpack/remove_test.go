package installedpack

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
)

// closings records the Entries whose Interactions were closed.
type closings []string

func (c *closings) CloseInteractions(_ context.Context, workspaceID, entryNamespace, entryName string) (int64, error) {
	*c = append(*c, workspaceID+"/"+entryNamespace+"/"+entryName)
	return 1, nil
}

func TestRemovingAnEntryThatIsAlreadyGoneStillClosesItsInteractions(t *testing.T) {
	g := NewWithT(t)
	ws := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Annotations: map[string]string{"platform/workspace-id": "w-1"}}}
	var closed closings
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(platformscheme.Scheme).WithObjects(ws).Build(), Interactions: &closed}
	o := &operation{r: r, kns: "team-acme-kit", ip: &platformv1.InstalledPack{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "acme.kit"},
		Status: platformv1.InstalledPackStatus{Operation: &platformv1.PackOperation{Kind: platformv1.PackOperationUpdate, Phase: platformv1.PackApplying}}}}
	// A process killed right after it deleted the Entry finds it gone when the step runs again.
	g.Expect(o.remove(context.Background(), "Entry", "hello")).To(Succeed())
	g.Expect(closed).To(Equal(closings{"w-1/acme.kit/hello"}))
	g.Expect(o.remove(context.Background(), "Agent", "greeter")).To(Succeed())
	g.Expect(closed).To(HaveLen(1), "only an Entry has conversations")
}
