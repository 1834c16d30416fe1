package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/resourcenamespace"
)

var _ = Describe("Resource namespaces", func() {
	const pack platformv1.ResourceNamespace = "contoso.reports"

	// publishedFlow creates Flow report in namespace ns with its version 1.0.0, which only the
	// platform writes.
	publishedFlow := func(ns string) {
		GinkgoHelper()
		definition := platformv1.FlowDefinition{FlowKind: platformv1.DirectFlow, Enabled: ptr.To(true),
			Target: &platformv1.FlowTarget{Kind: platformv1.AgentFlowTarget, ID: "reporter"}}
		Expect(k8sClient.Create(ctx, &platformv1.Flow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "report"}, Definition: definition})).To(Succeed())
		snapshot := *definition.DeepCopy()
		snapshot.Version = "1.0.0"
		Expect(platformClient.Create(ctx, &platformv1.FlowVersion{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "report-1.0.0"},
			Definition: platformv1.FlowVersionDefinition{FlowName: "report", Version: "1.0.0", Digest: snapshot.Digest(), Snapshot: snapshot},
		})).To(Succeed())
	}
	// triggerOf is a Trigger of workspace that runs version 1.0.0 of Flow report of the pack.
	triggerOf := func(workspace string) *platformv1.Trigger {
		return &platformv1.Trigger{
			ObjectMeta: metav1.ObjectMeta{Namespace: workspace, Name: "nightly-report"},
			Definition: platformv1.TriggerDefinition{
				Source: platformv1.TriggerSource{Kind: platformv1.ScheduleTriggerSource, Schedule: &platformv1.TriggerSchedule{
					Type: platformv1.CronSchedule, Expression: "0 2 * * *", TimeZone: "UTC"}},
				Target: platformv1.TriggerTarget{Kind: platformv1.FlowTriggerTarget,
					Flow: &platformv1.FlowReference{Name: "report", Namespace: pack, Version: "1.0.0"}},
			},
		}
	}

	It("resolve a reconciler's reference to a Flow of a Pack namespace of the same workspace, never another's", func() {
		workspace, other := newWorkspace(), newWorkspace()
		By("another workspace has the pack and its Flow: the reference does not reach it")
		otherPack, err := resourcenamespace.Ensure(ctx, k8sClient, other, pack)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, namespaceNamed(otherPack)))).To(Succeed()) })
		publishedFlow(otherPack)

		trigger := triggerOf(workspace)
		Expect(k8sClient.Create(ctx, trigger)).To(Succeed())
		ready := expectReady(trigger, metav1.ConditionFalse, platformv1.FlowNotFoundReason)
		Expect(ready.Message).To(Equal("definition.target.flow.namespace: resource namespace contoso.reports does not exist in the workspace"))
		entry := &platformv1.Entry{
			ObjectMeta: metav1.ObjectMeta{Namespace: workspace, Name: "report"},
			Definition: platformv1.EntryDefinition{
				EntryPresentation: platformv1.EntryPresentation{DisplayName: "Report", Type: platformv1.PromptEntry},
				Binding:           platformv1.EntryBinding{Flow: &platformv1.FlowReference{Name: "report", Namespace: pack, Version: "1.0.0"}},
			},
		}
		Expect(k8sClient.Create(ctx, entry)).To(Succeed())
		ready = expectReady(entry, metav1.ConditionFalse, platformv1.FlowNotFoundReason)
		Expect(ready.Message).To(ContainSubstring("resource namespace contoso.reports does not exist in the workspace"))

		By("installing the pack in the workspace: the watches bring the Trigger and the Entry of the workspace's own namespace along")
		packNamespace, err := resourcenamespace.Ensure(ctx, k8sClient, workspace, pack)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, namespaceNamed(packNamespace)))).To(Succeed())
		})
		Expect(packNamespace).NotTo(Equal(otherPack))
		publishedFlow(packNamespace)
		expectReady(trigger, metav1.ConditionTrue, platformv1.ResolvedReason)
		expectReady(entry, metav1.ConditionTrue, platformv1.ResolvedReason)
		Expect(entry.Status.ResolvedTarget).To(Equal(&platformv1.FlowVersionReference{Name: "report", Namespace: pack, Version: "1.0.0"}))
	})

	It("are deleted with their workspace", func() {
		workspace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ws-"}}
		Expect(k8sClient.Create(ctx, workspace)).To(Succeed())
		first, err := resourcenamespace.Ensure(ctx, k8sClient, workspace.Name, pack)
		Expect(err).NotTo(HaveOccurred())
		second, err := resourcenamespace.Ensure(ctx, k8sClient, workspace.Name, "acme.kit")
		Expect(err).NotTo(HaveOccurred())
		publishedFlow(first)
		bystander := newWorkspace()
		kept, err := resourcenamespace.Ensure(ctx, k8sClient, bystander, pack)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, namespaceNamed(kept)))).To(Succeed()) })

		By("a resource namespace is not a workspace: it gets no built-in RuntimeProfile")
		Consistently(func(g Gomega) {
			profiles := &platformv1.RuntimeProfileList{}
			g.Expect(k8sClient.List(ctx, profiles, client.InNamespace(first))).To(Succeed())
			g.Expect(profiles.Items).To(BeEmpty())
		}).WithTimeout(500 * time.Millisecond).Should(Succeed())

		Expect(k8sClient.Delete(ctx, workspace)).To(Succeed())
		for _, name := range []string{first, second} {
			Eventually(func(g Gomega) {
				ns := &corev1.Namespace{}
				err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, ns)
				g.Expect(apierrors.IsNotFound(err) || !ns.DeletionTimestamp.IsZero()).To(BeTrue(), "namespace %s is being deleted", name)
			}).Should(Succeed())
		}
		ns := &corev1.Namespace{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: kept}, ns)).To(Succeed())
		Expect(ns.DeletionTimestamp.IsZero()).To(BeTrue(), "another workspace's resource namespace stays")
	})
})

func namespaceNamed(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
