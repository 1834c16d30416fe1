package service_test

import (
	"context"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/resourcenamespace"
)

func TestAFlowThatATriggerTargetsIsALiveReferenceThatUninstallKeepsAndAnUpdateMayNotRemove(t *testing.T) {
	g := NewWithT(t)
	server, _ := packServer(t)
	ctx := context.Background()
	t.Cleanup(func() { forget(t, "acme.triggered") })
	installed := postArchive(t, server, "/api/packs", "application/zip", namedPack("triggered", "1.0.0", "Say hello.").Zip())
	g.Expect(installed.status).To(Equal(http.StatusCreated), installed.raw)
	off := false
	trigger := &platformv1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "morning-greeting"},
		Definition: platformv1.TriggerDefinition{Enabled: &off,
			Source: platformv1.TriggerSource{Kind: "schedule", Schedule: &platformv1.TriggerSchedule{Type: "cron", Expression: "0 9 * * *", TimeZone: "UTC"}},
			Target: platformv1.TriggerTarget{Kind: platformv1.FlowTriggerTarget, Flow: &platformv1.FlowReference{Namespace: "acme.triggered", Name: "greet"}}}}
	g.Expect(kube.Create(ctx, trigger)).To(Succeed())
	t.Cleanup(func() { _ = kube.Delete(ctx, trigger) })

	withoutFlow := namedPack("triggered", "1.1.0", "Say hello.")
	delete(withoutFlow.Resources, "flows/greet.yaml")
	before := resourceVersions(t, "default", "acme.triggered")
	refused := postArchive(t, server, "/api/packs", "application/zip", withoutFlow.Zip())
	expectProblem(g, refused, http.StatusConflict)
	g.Expect(refused.body).To(HaveKeyWithValue("reason", "TriggerReferences"))
	g.Expect(refused.body["detail"]).To(ContainSubstring("Flow greet is the target of Trigger morning-greeting"))
	g.Expect(refused.body["changes"]).To(ConsistOf(And(HaveKeyWithValue("name", "greet"), HaveKeyWithValue("action", "remove"))))
	g.Expect(resourceVersions(t, "default", "acme.triggered")).To(Equal(before), "a refused update changes nothing")

	preview := call(t, server, http.MethodGet, "/api/packs/acme/triggered/uninstall-preview", "")
	g.Expect(preview.body["preserve"]).To(ConsistOf(And(HaveKeyWithValue("name", "greet"),
		HaveKeyWithValue("reason", "referenced by Trigger morning-greeting"))))
	removed := call(t, server, http.MethodDelete, "/api/packs/acme/triggered", "")
	g.Expect(removed.status).To(Equal(http.StatusOK), removed.raw)
	g.Expect(removed.body).To(HaveKeyWithValue("state", "degraded"))
	g.Expect(removed.body["preserved"]).To(ConsistOf(And(HaveKeyWithValue("kind", "Flow"), HaveKeyWithValue("name", "greet"))))
	flow := &platformv1.Flow{}
	g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: resourcenamespace.KubeName("default", "acme.triggered"), Name: "greet"}, flow)).To(Succeed(),
		"the Trigger's target is still there")
}
