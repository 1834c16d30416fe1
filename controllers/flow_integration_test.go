package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

var _ = Describe("Flow", func() {
	var namespace string
	BeforeEach(func() { namespace = newWorkspace() })

	It("reports each finding of an invalid Orchestration flow with its field path", func() {
		flow := &platformv1.Flow{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "review"},
			Definition: platformv1.FlowDefinition{
				FlowKind: platformv1.OrchestrationFlow,
				Steps: []platformv1.FlowStep{
					{Name: "start", Type: platformv1.InputStep},
					{Name: "shape", Type: platformv1.TransformStep, Expression: `{"text": input`},
					{Name: "check", Type: platformv1.ConditionStep, Expression: `steps["shape"].text != ""`},
					{Name: "done", Type: platformv1.OutputStep},
					{Name: "stray", Type: platformv1.OutputStep},
				},
				Edges: []platformv1.FlowEdge{
					{From: "start", To: "shape"},
					{From: "shape", To: "check"},
					{From: "check", To: "done", When: "true"},
				},
			},
		}
		Expect(k8sClient.Create(ctx, flow)).To(Succeed())
		ready := expectReady(flow, metav1.ConditionFalse, platformv1.InvalidDefinitionReason)
		Expect(ready.Message).To(ContainSubstring("definition.steps[1].expression: does not compile: 1:"))
		Expect(ready.Message).To(ContainSubstring(`definition.steps[4]: step "stray" is not reachable from the Input step "start"`))
		Expect(ready.Message).To(ContainSubstring(`definition.steps[2]: Condition step "check" needs one edge for "true" and one for "false"`))
		Expect(ready.Message).NotTo(ContainSubstring("\n"))
		Expect(string(flow.Status.DefinitionDigest)).To(HavePrefix("sha256:"))
	})

	It("is AgentNotFound until its Direct target exists", func() {
		flow := &platformv1.Flow{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "triage"},
			Definition: platformv1.FlowDefinition{
				FlowKind: platformv1.DirectFlow,
				Target:   &platformv1.FlowTarget{Kind: platformv1.AgentFlowTarget, ID: "triage"},
			},
		}
		Expect(k8sClient.Create(ctx, flow)).To(Succeed())
		ready := expectReady(flow, metav1.ConditionFalse, platformv1.AgentNotFoundReason)
		Expect(ready.Message).To(Equal(`definition.target.id: Agent "triage" not found`))

		Expect(k8sClient.Create(ctx, newAgent(namespace, "triage", nil))).To(Succeed())
		ready = expectReady(flow, metav1.ConditionTrue, platformv1.ResolvedReason)
		Expect(ready.Message).To(Equal(`Direct flow to Agent "triage"`))
	})

	It("takes its published versions with it when it is deleted, which only the platform could do by hand", func() {
		Expect(k8sClient.Create(ctx, newAgent(namespace, "helper", nil))).To(Succeed())
		flow := &platformv1.Flow{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "short-lived"},
			Definition: platformv1.FlowDefinition{
				FlowKind: platformv1.DirectFlow, Version: "1.0.0", Publication: platformv1.AutomaticPublication, Enabled: ptr.To(true),
				Target: &platformv1.FlowTarget{Kind: platformv1.AgentFlowTarget, ID: "helper"},
			},
		}
		Expect(k8sClient.Create(ctx, flow)).To(Succeed())
		version := &platformv1.FlowVersion{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "short-lived-1.0.0"}}
		expectReady(version, metav1.ConditionTrue, platformv1.ResolvedReason)
		err := k8sClient.Delete(ctx, version)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "nobody but the platform deletes a FlowVersion: %v", err)

		Expect(k8sClient.Delete(ctx, flow)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(version), &platformv1.FlowVersion{}))
		}).Should(BeTrue(), "the version went with its Flow")
	})
})
