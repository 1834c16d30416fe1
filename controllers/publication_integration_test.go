package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/workspace"
	"platform.dev/platform/internal/demo"
	"platform.dev/platform/internal/publication"
)

// published waits for the PublishedEntry of the Entry name in namespace and returns it.
func published(namespace, name string) *platformv1.PublishedEntry {
	GinkgoHelper()
	entry := &platformv1.PublishedEntry{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, entry)).To(Succeed())
	}).Should(Succeed())
	return entry
}

// expectCondition waits until obj's condition of type kind has status and reason.
func expectCondition(obj client.Object, kind string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	GinkgoHelper()
	var c *metav1.Condition
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		c = meta.FindStatusCondition(resourceStatus(obj).Conditions, kind)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(status), c.Message)
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(obj.GetGeneration()))
	}).Should(Succeed())
	return c
}

func automaticEntry(namespace, name string, binding platformv1.EntryBinding) *platformv1.Entry {
	return &platformv1.Entry{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Definition: platformv1.EntryDefinition{
			Publication: platformv1.AutomaticPublication,
			Binding:     binding,
			EntryPresentation: platformv1.EntryPresentation{DisplayName: "Ask", Fields: []platformv1.EntryField{
				{Name: "request", Type: platformv1.TextField, Role: platformv1.PrimaryInputRole},
			}},
		},
	}
}

var _ = Describe("Publication", func() {
	var namespace string
	BeforeEach(func() { namespace = newWorkspace() })

	It("seeds the demo Entries, published and executable offline, on the home Dashboard with prepare-report Primary", func() {
		Expect(demo.Seed(ctx, k8sClient, namespace)).To(Succeed())
		for _, name := range []string{"prepare-report", "quick-answer", "guided-request"} {
			entry := published(namespace, name)
			Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(entry), entry)).To(Succeed())
				g.Expect(entry.Status.TargetState).To(Equal(platformv1.TargetExecutable), "%s: %v", name, entry.Status.Conditions)
			}).Should(Succeed())
			Expect(entry.Definition.OwnerWorkspaceID).To(Equal(namespace), "a namespace made without the identity store is its own workspace id")
		}
		home := &platformv1.Dashboard{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: workspace.HomeDashboard}, home)).To(Succeed())
		Expect(home.Definition.IsDefault).To(BeTrue())
		Expect(home.Definition.Entries).To(ContainElement(And(
			HaveField("Name", platformv1.ResourceName("prepare-report")), HaveField("Role", platformv1.PrimaryDashboardRole))))
		Expect(home.Definition.Entries).To(HaveLen(3))
		expectReady(home, metav1.ConditionTrue, platformv1.ResolvedReason)
	})

	It("normalizes an Agent binding through a hidden, system-managed Direct Agent Flow that pins the agent", func() {
		Expect(k8sClient.Create(ctx, newAgent(namespace, "helper", nil))).To(Succeed())
		entry := automaticEntry(namespace, "ask-helper", platformv1.EntryBinding{Agent: &platformv1.LocalObjectReference{Name: "helper"}})
		Expect(k8sClient.Create(ctx, entry)).To(Succeed())

		pub := published(namespace, "ask-helper")
		Expect(pub.Definition.ResolvedTarget).To(Equal(platformv1.FlowVersionReference{Name: "direct-helper", Version: publication.DirectAgentFlowVersion}))
		flow := &platformv1.Flow{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "direct-helper"}, flow)).To(Succeed())
		Expect(flow.Labels).To(HaveKeyWithValue(manifest.SystemManagedLabel, "true"))
		Expect(flow.Definition.Target.ID).To(Equal(platformv1.ResourceName("helper")))
		version, err := publication.FindFlowVersion(ctx, k8sClient, namespace, "direct-helper", publication.DirectAgentFlowVersion)
		Expect(err).NotTo(HaveOccurred())
		Expect(version).NotTo(BeNil())
		Expect(version.Definition.Snapshot.Target.ID).To(Equal(platformv1.ResourceName("helper")))
		expectCondition(entry, platformv1.PublishedCondition, metav1.ConditionTrue, platformv1.PublishedReason)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(entry), entry)).To(Succeed())
			g.Expect(entry.Status.ResolvedTarget).To(Equal(&pub.Definition.ResolvedTarget), "the draft's status names the Flow version its binding resolves to")
		}).Should(Succeed())
		Expect(entry.Status.Publications).To(HaveLen(1))
		Expect(entry.Status.Publications[0].PublishedBy).To(Equal(publication.AutomaticPublisher))
		Expect(entry.Status.Publications[0].Generation).To(Equal(entry.Generation))
	})

	It("publishes a new projection for a changed draft and records each publication", func() {
		Expect(k8sClient.Create(ctx, newAgent(namespace, "helper", nil))).To(Succeed())
		entry := automaticEntry(namespace, "ask", platformv1.EntryBinding{Agent: &platformv1.LocalObjectReference{Name: "helper"}})
		Expect(k8sClient.Create(ctx, entry)).To(Succeed())
		first := published(namespace, "ask")
		expectCondition(entry, platformv1.PublishedCondition, metav1.ConditionTrue, platformv1.PublishedReason)

		update(entry, func() { entry.Definition.DisplayName = "Ask the helper" })
		Eventually(func(g Gomega) {
			again := &platformv1.PublishedEntry{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(first), again)).To(Succeed())
			g.Expect(again.Definition.DisplayName).To(Equal("Ask the helper"))
			g.Expect(again.UID).NotTo(Equal(first.UID), "a publication replaces the projection as a whole")
		}).Should(Succeed())
		expectCondition(entry, platformv1.PublishedCondition, metav1.ConditionTrue, platformv1.PublishedReason)
		Expect(entry.Status.Publications).To(HaveLen(2))
		Expect(entry.Status.Publications[0].Generation).To(Equal(entry.Generation), "newest first")
	})

	It("unpublishes an Entry whose draft is deleted with kubectl", func() {
		Expect(k8sClient.Create(ctx, newAgent(namespace, "helper", nil))).To(Succeed())
		entry := automaticEntry(namespace, "pruned", platformv1.EntryBinding{Agent: &platformv1.LocalObjectReference{Name: "helper"}})
		Expect(k8sClient.Create(ctx, entry)).To(Succeed())
		pub := published(namespace, "pruned")
		Expect(k8sClient.Delete(ctx, entry)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(pub), pub))
		}).Should(BeTrue())
	})

	It("keeps a Manual draft's edits invisible until it is published", func() {
		Expect(k8sClient.Create(ctx, newAgent(namespace, "helper", nil))).To(Succeed())
		entry := automaticEntry(namespace, "manual", platformv1.EntryBinding{Agent: &platformv1.LocalObjectReference{Name: "helper"}})
		entry.Definition.Publication = platformv1.ManualPublication
		Expect(k8sClient.Create(ctx, entry)).To(Succeed())
		c := expectCondition(entry, platformv1.PublishedCondition, metav1.ConditionFalse, platformv1.DraftNotPublishedReason)
		Expect(c.Message).To(Equal("the draft has never been published"))
		Consistently(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(entry), &platformv1.PublishedEntry{})
		}, "1s").ShouldNot(Succeed())
	})

	It("reports an automatic publication that cannot be made with the field path at fault", func() {
		entry := automaticEntry(namespace, "broken", platformv1.EntryBinding{Agent: &platformv1.LocalObjectReference{Name: "helper"}})
		entry.Definition.Fields = nil
		Expect(k8sClient.Create(ctx, newAgent(namespace, "helper", nil))).To(Succeed())
		Expect(k8sClient.Create(ctx, entry)).To(Succeed())
		c := expectCondition(entry, platformv1.PublishedCondition, metav1.ConditionFalse, platformv1.PublicationFailedReason)
		Expect(c.Message).To(ContainSubstring("definition.fields: a Prompt Entry has one field with the role PrimaryInput"))
	})

	It("publishes an automatic Flow as the version its draft names, and refuses to republish that version with another definition", func() {
		Expect(k8sClient.Create(ctx, newAgent(namespace, "helper", nil))).To(Succeed())
		flow := &platformv1.Flow{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "answer"},
			Definition: platformv1.FlowDefinition{
				FlowKind: platformv1.DirectFlow, Version: "1.0.0", Publication: platformv1.AutomaticPublication, Enabled: ptr.To(true),
				Target: &platformv1.FlowTarget{Kind: platformv1.AgentFlowTarget, ID: "helper"},
			},
		}
		Expect(k8sClient.Create(ctx, flow)).To(Succeed())
		expectCondition(flow, platformv1.PublishedCondition, metav1.ConditionTrue, platformv1.PublishedReason)
		Expect(flow.Status.ActiveVersion).To(Equal(platformv1.SemanticVersion("1.0.0")))

		entry := automaticEntry(namespace, "answer", platformv1.EntryBinding{Flow: &platformv1.FlowReference{Name: "answer"}})
		Expect(k8sClient.Create(ctx, entry)).To(Succeed())
		Expect(published(namespace, "answer").Definition.ResolvedTarget).To(Equal(platformv1.FlowVersionReference{Name: "answer", Version: "1.0.0"}),
			"a Flow binding without a version is pinned to the active version at publication")

		update(flow, func() { flow.Definition.DisplayName = "Changed without a new version" })
		c := expectCondition(flow, platformv1.PublishedCondition, metav1.ConditionFalse, platformv1.PublicationFailedReason)
		Expect(c.Message).To(ContainSubstring("definition.version: version 1.0.0 is published with another definition"))

		update(flow, func() { flow.Definition.Version = "1.1.0" })
		expectCondition(flow, platformv1.PublishedCondition, metav1.ConditionTrue, platformv1.PublishedReason)
		Expect(flow.Status.ActiveVersion).To(Equal(platformv1.SemanticVersion("1.1.0")))
		Expect(published(namespace, "answer").Definition.ResolvedTarget.Version).To(Equal(platformv1.SemanticVersion("1.0.0")),
			"a published Entry stays pinned to its exact version")
	})

	It("gives every workspace an empty home Dashboard and never puts back the Entries people remove", func() {
		home := &platformv1.Dashboard{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: workspace.HomeDashboard}}
		Eventually(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(home), home) }).Should(Succeed())
		Expect(home.Definition.IsDefault).To(BeTrue())
		Expect(home.Annotations).To(HaveKeyWithValue(manifest.BuiltinAnnotation, "true"))
		update(home, func() {
			home.Definition.Entries = []platformv1.DashboardEntryReference{{Name: "gone", Namespace: platformv1.DefaultResourceNamespace, Role: platformv1.StandardDashboardRole}}
		})
		update(home, func() { home.Definition.Entries = nil })
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(home), home)).To(Succeed())
			g.Expect(home.Definition.Entries).To(BeEmpty())
		}, "1s").Should(Succeed())
	})
})
