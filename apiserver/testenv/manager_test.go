package testenv_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

var widgetGVK = schema.GroupVersionKind{Group: "example.test", Version: "v1", Kind: "Widget"}

func newWidget(namespace, name string, size int64) *unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgetGVK)
	w.SetNamespace(namespace)
	w.SetName(name)
	Expect(unstructured.SetNestedField(w.Object, size, "spec", "size")).To(Succeed())
	return w
}

// widgetReconciler reports each Widget as reconciled and records an event through both recorder
// APIs of controller-runtime (events.k8s.io/v1 and the deprecated core v1 one).
type widgetReconciler struct {
	client.Client
	recordNew func(obj client.Object, reason, note string)
	recordOld func(obj client.Object, reason, note string)
}

func (r *widgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgetGVK)
	if err := r.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	observed, _, _ := unstructured.NestedInt64(w.Object, "status", "observedGeneration")
	if observed == w.GetGeneration() {
		return ctrl.Result{}, nil
	}
	base := w.DeepCopy()
	Expect(unstructured.SetNestedField(w.Object, w.GetGeneration(), "status", "observedGeneration")).To(Succeed())
	Expect(unstructured.SetNestedField(w.Object, "Reconciled", "status", "phase")).To(Succeed())
	if err := r.Status().Patch(ctx, w, client.MergeFrom(base)); err != nil {
		return ctrl.Result{}, err
	}
	r.recordNew(w, "Reconciled", fmt.Sprintf("generation %d reconciled", w.GetGeneration()))
	r.recordOld(w, "ReconciledLegacy", fmt.Sprintf("generation %d reconciled", w.GetGeneration()))
	return ctrl.Result{}, nil
}

var _ = Describe("A controller-runtime manager", Ordered, func() {
	const leaseName = "widget-controller-leader"
	var mgrCancel context.CancelFunc

	BeforeAll(func() {
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{
			LeaderElection:                true,
			LeaderElectionID:              leaseName,
			LeaderElectionNamespace:       metav1.NamespaceSystem,
			LeaderElectionReleaseOnCancel: true,
			Metrics:                       metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress:        "0",
		})
		Expect(err).NotTo(HaveOccurred())
		newRecorder := mgr.GetEventRecorder("widget-controller")
		oldRecorder := mgr.GetEventRecorderFor("widget-controller-legacy") //nolint:staticcheck // the deprecated core v1 path is what older controllers use
		r := &widgetReconciler{
			Client: mgr.GetClient(),
			recordNew: func(obj client.Object, reason, note string) {
				newRecorder.Eventf(obj, nil, corev1.EventTypeNormal, reason, "Reconcile", note)
			},
			recordOld: func(obj client.Object, reason, note string) {
				oldRecorder.Event(obj, corev1.EventTypeNormal, reason, note)
			},
		}
		watched := &unstructured.Unstructured{}
		watched.SetGroupVersionKind(widgetGVK)
		Expect(ctrl.NewControllerManagedBy(mgr).For(watched).Named("widget").Complete(r)).To(Succeed())

		var mgrCtx context.Context
		mgrCtx, mgrCancel = context.WithCancel(ctx)
		go func() {
			defer GinkgoRecover()
			Expect(mgr.Start(mgrCtx)).To(Succeed())
		}()
	})

	AfterAll(func() { mgrCancel() })

	It("takes the leader election Lease and keeps renewing it", func() {
		var first metav1.MicroTime
		Eventually(func(g Gomega) {
			lease := &coordinationv1.Lease{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: leaseName}, lease)).To(Succeed())
			g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
			g.Expect(*lease.Spec.HolderIdentity).NotTo(BeEmpty())
			g.Expect(lease.Spec.RenewTime).NotTo(BeNil())
			first = *lease.Spec.RenewTime
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			lease := &coordinationv1.Lease{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: leaseName}, lease)).To(Succeed())
			g.Expect(lease.Spec.RenewTime.After(first.Time)).To(BeTrue(), "lease renewed")
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("reconciles a custom resource and records events visible in both event APIs", func() {
		w := newWidget(metav1.NamespaceDefault, "reconciled-widget", 3)
		Expect(k8sClient.Create(ctx, w)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, w))).To(Succeed()) })

		Eventually(func(g Gomega) {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(widgetGVK)
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
			phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
			g.Expect(phase).To(Equal("Reconciled"))
		}).WithTimeout(30 * time.Second).Should(Succeed())

		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(k8sClient.List(ctx, events, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(SatisfyAll(
				HaveField("Reason", "Reconciled"),
				HaveField("Regarding.Name", w.GetName()),
				HaveField("ReportingController", "widget-controller"),
			)))
			// The same Event through the core v1 view, where kubectl describe looks.
			core := &corev1.EventList{}
			g.Expect(k8sClient.List(ctx, core, client.InNamespace(metav1.NamespaceDefault),
				client.MatchingFields{"involvedObject.name": w.GetName()})).To(Succeed())
			g.Expect(core.Items).To(ContainElements(
				SatisfyAll(HaveField("Reason", "Reconciled"), HaveField("Message", "generation 1 reconciled")),
				SatisfyAll(HaveField("Reason", "ReconciledLegacy"), HaveField("Source.Component", "widget-controller-legacy")),
			))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})
})

var _ = Describe("An envtest Environment using the control plane as an existing cluster", func() {
	It("installs the suite's CRDs and serves them", func() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: "widgets.example.test"}, crd)).To(Succeed())
		Expect(crd.Status.Conditions).To(ContainElement(SatisfyAll(
			HaveField("Type", apiextensionsv1.Established), HaveField("Status", apiextensionsv1.ConditionTrue))))

		resources, err := platform.Kube.Discovery().ServerResourcesForGroupVersion("example.test/v1")
		Expect(err).NotTo(HaveOccurred())
		Expect(resources.APIResources).To(ContainElement(HaveField("Name", "widgets")))
	})

	It("rejects a custom resource that violates the CRD schema, naming the field", func() {
		err := k8sClient.Create(ctx, newWidget(metav1.NamespaceDefault, "too-small", 0))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.size"))
	})
})
