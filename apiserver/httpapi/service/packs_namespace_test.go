package service_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/resourcenamespace"
)

// namespaceOf is the Pack's kube namespace; nil when it is gone or going.
func namespaceOf(g Gomega, id string) *corev1.Namespace {
	ns := &corev1.Namespace{}
	err := kube.Get(context.Background(), client.ObjectKey{Name: resourcenamespace.KubeName("default", platformv1.ResourceNamespace(id))}, ns)
	if apierrors.IsNotFound(err) || (err == nil && ns.DeletionTimestamp != nil) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	return ns
}

func TestUninstallRemovesThePacksNamespaceUnlessSomethingIsLeftInIt(t *testing.T) {
	server, _ := packServer(t)
	ctx := context.Background()
	tests := map[string]struct {
		// change is what a person does after the install.
		change        func(g Gomega, kns string)
		wantState     string
		wantNamespace bool
		// wantKept is what the uninstall names as keeping the namespace.
		wantKept []any
	}{
		"nothing changed: the record and the namespace go": {
			change: func(Gomega, string) {}, wantState: "removed",
		},
		"a modified resource is preserved: the record is degraded and the namespace stays with it": {
			change: func(g Gomega, kns string) {
				agent := &platformv1.Agent{}
				g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: kns, Name: "greeter"}, agent)).To(Succeed())
				agent.Definition.Instructions = "Mine now."
				g.Expect(kube.Update(ctx, agent)).To(Succeed())
			},
			wantState: "degraded", wantNamespace: true,
		},
		"a person's own resource in the namespace keeps the namespace, not the record": {
			change: func(g Gomega, kns string) {
				mine := &platformv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: kns, Name: "mine"},
					Definition: platformv1.AgentDefinition{Handler: "chat", Instructions: "Mine."}}
				g.Expect(kube.Create(ctx, mine)).To(Succeed())
			},
			wantState: "removed", wantNamespace: true, wantKept: []any{"Agent mine"},
		},
	}
	i := 0
	for name, tt := range tests {
		i++
		id := "spaced-" + string(rune('a'+i))
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			t.Cleanup(func() { forget(t, "acme."+id) })
			installed := postArchive(t, server, "/api/packs", "application/zip", namedPack(id, "1.0.0", "Say hello.").Zip())
			g.Expect(installed.status).To(Equal(http.StatusCreated), installed.raw)
			g.Expect(namespaceOf(g, "acme."+id)).NotTo(BeNil())
			tt.change(g, resourcenamespace.KubeName("default", platformv1.ResourceNamespace("acme."+id)))
			removed := call(t, server, http.MethodDelete, "/api/packs/acme/"+id, "")
			g.Expect(removed.status).To(Equal(http.StatusOK), removed.raw)
			g.Expect(removed.body).To(HaveKeyWithValue("state", tt.wantState))
			if tt.wantKept == nil {
				g.Expect(removed.body).NotTo(HaveKey("keptInNamespace"))
			} else {
				g.Expect(removed.body["keptInNamespace"]).To(Equal(tt.wantKept))
			}
			if tt.wantNamespace {
				g.Consistently(func(g Gomega) { g.Expect(namespaceOf(g, "acme."+id)).NotTo(BeNil()) }, time.Second).Should(Succeed())
			} else {
				g.Eventually(func(g Gomega) { g.Expect(namespaceOf(g, "acme."+id)).To(BeNil()) }, 10*time.Second).Should(Succeed())
			}
			if tt.wantState == "degraded" {
				ip := &platformv1.InstalledPack{}
				g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "acme." + id}, ip)).To(Succeed())
				ready := meta.FindStatusCondition(ip.Status.Conditions, platformv1.ReadyCondition)
				g.Expect(ready).NotTo(BeNil())
				g.Expect(ready.Message).To(ContainSubstring("the namespace acme." + id + " stays"))
			}
		})
	}
}
