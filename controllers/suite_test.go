package controllers_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/packs"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/testenv"
	"platform.dev/platform/controllers"
)

// The suite boots the control plane once and runs the platform's controller manager against it,
// as `platform serve` does (leader election included). With PLATFORM_TEST_KUBECONFIG it runs
// against that cluster instead, which must have the CRDs (kubectl apply -k config/crd).
var (
	ctx      context.Context
	cancel   context.CancelFunc
	platform *testenv.Env
	// k8sClient is the administrator's, as kubectl's; platformClient is the platform's own, for
	// what only the platform writes (published Flow versions and Entries, system-managed Flows).
	k8sClient      client.Client
	platformClient client.Client
	mgrCancel      context.CancelFunc
	mgrDone        chan error
	// localVault is the Local Vault the manager's Secret and Vault reconcilers see, as in
	// `platform serve`: a SQLite store and a key file in a temporary directory.
	localVault *secrets.LocalVault
	vaultStore *store.Store
	// packArchives stores the Pack archives the InstalledPack controller reads, in vaultStore.
	packArchives *packs.Store
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controllers against the embedded control plane")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	ctx, cancel = context.WithCancel(context.Background())

	var err error
	platform, err = testenv.Start(ctx, testenv.Options{})
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(platform.Config, client.Options{Scheme: platformscheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	platformClient, err = client.New(platform.Platform, client.Options{Scheme: platformscheme.Scheme})
	Expect(err).NotTo(HaveOccurred())

	dir := GinkgoT().TempDir()
	vaultStore, err = store.Open(ctx, store.Options{DataDir: dir})
	Expect(err).NotTo(HaveOccurred())
	localVault = &secrets.LocalVault{Store: vaultStore, MasterKey: secrets.MasterKeySource{File: filepath.Join(dir, secrets.KeyFileName)}}
	_, err = localVault.Initialize()
	Expect(err).NotTo(HaveOccurred())

	// The controllers run as the platform (the loopback identity), as in `platform serve`: the
	// kube API's admission rules let only the platform write some objects.
	packArchives = &packs.Store{DB: vaultStore}
	mgr, err := controllers.NewManager(platform.Platform, controllers.Options{LeaderElection: true, LocalVault: localVault, PackArchives: packArchives})
	Expect(err).NotTo(HaveOccurred())
	var mgrCtx context.Context
	mgrCtx, mgrCancel = context.WithCancel(ctx)
	mgrDone = make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		mgrDone <- mgr.Start(mgrCtx)
	}()
})

var _ = AfterSuite(func() {
	// The manager stops before the control plane, as in `platform serve`.
	if mgrCancel != nil {
		mgrCancel()
		Eventually(mgrDone).Should(Receive(BeNil()))
	}
	cancel()
	if vaultStore != nil {
		Expect(vaultStore.Close()).To(Succeed())
	}
	if platform != nil {
		Expect(platform.Stop()).To(Succeed())
	}
})

// newWorkspace creates a namespace for one spec and deletes it after.
func newWorkspace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ws-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ns))).To(Succeed()) })
	return ns.Name
}

// update re-reads obj, applies change and writes it, again on a conflict: the controllers write
// the status of the same objects.
func update(obj client.Object, change func()) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		return k8sClient.Update(ctx, obj)
	})).To(Succeed())
}

// resourceStatus is the part of the status every platform kind has.
func resourceStatus(obj client.Object) *platformv1.ResourceStatus {
	switch o := obj.(type) {
	case *platformv1.Agent:
		return &o.Status.ResourceStatus
	case *platformv1.ModelProfile:
		return &o.Status.ResourceStatus
	case *platformv1.ModelProvider:
		return &o.Status.ResourceStatus
	case *platformv1.Flow:
		return &o.Status.ResourceStatus
	case *platformv1.RuntimeProfile:
		return &o.Status.ResourceStatus
	case *platformv1.FlowVersion:
		return &o.Status.ResourceStatus
	case *platformv1.Entry:
		return &o.Status.ResourceStatus
	case *platformv1.PublishedEntry:
		return &o.Status.ResourceStatus
	case *platformv1.Dashboard:
		return &o.Status.ResourceStatus
	case *platformv1.Trigger:
		return &o.Status.ResourceStatus
	case *platformv1.Model:
		return &o.Status.ResourceStatus
	case *platformv1.Tool:
		return &o.Status.ResourceStatus
	case *platformv1.ToolProvider:
		return &o.Status.ResourceStatus
	case *platformv1.Secret:
		return &o.Status.ResourceStatus
	case *platformv1.Vault:
		return &o.Status.ResourceStatus
	case *platformv1.SourceRegistry:
		return &o.Status.ResourceStatus
	case *platformv1.InstalledPack:
		return &o.Status.ResourceStatus
	}
	Fail("no ResourceStatus for " + obj.GetObjectKind().GroupVersionKind().String())
	return nil
}

// expectReady waits until obj, re-read, reports a Ready condition with status and reason for its
// current generation, and returns that condition; obj holds what was read.
func expectReady(obj client.Object, status metav1.ConditionStatus, reason string) *metav1.Condition {
	GinkgoHelper()
	var ready *metav1.Condition
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		rs := resourceStatus(obj)
		ready = meta.FindStatusCondition(rs.Conditions, platformv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil(), "%s has a Ready condition", obj.GetName())
		g.Expect(ready.Status).To(Equal(status), "%s: %s", obj.GetName(), ready.Message)
		g.Expect(ready.Reason).To(Equal(reason), "%s: %s", obj.GetName(), ready.Message)
		g.Expect(rs.ObservedGeneration).To(Equal(obj.GetGeneration()))
		g.Expect(ready.ObservedGeneration).To(Equal(obj.GetGeneration()))
	}).Should(Succeed())
	return ready
}
