package testenv_test

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"platform.dev/platform/apiserver/testenv"
)

// The suite is written as kubebuilder scaffolds envtest suites; the only change is that the
// Environment uses the platform's control plane as an existing cluster.
var (
	ctx       context.Context
	cancel    context.CancelFunc
	platform  *testenv.Env
	testEnv   *envtest.Environment
	cfg       *rest.Config
	k8sClient client.Client
)

func TestControllerRuntimeAgainstTheControlPlane(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "controller-runtime against the embedded control plane")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())

	var err error
	platform, err = testenv.Start(ctx, testenv.Options{})
	Expect(err).NotTo(HaveOccurred())

	testEnv = &envtest.Environment{
		UseExistingCluster:    ptr.To(true),
		Config:                platform.Config,
		CRDDirectoryPaths:     []string{filepath.Join("testdata", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	Expect(cfg).NotTo(BeNil())

	k8sClient, err = client.New(cfg, client.Options{})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	cancel()
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
	if platform != nil {
		Expect(platform.Stop()).To(Succeed())
	}
})
