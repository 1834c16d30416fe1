package apiserver

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/controllers"
)

// `platform serve` runs the controllers on the control plane it starts: the default workspace
// receives its built-in RuntimeProfile, the manager holds the leader election Lease, and
// shutting down stops the controllers, then the control plane, without error.
func TestServeRunsTheControllers(t *testing.T) {
	g := NewWithT(t)
	dataDir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	cmd := NewServeCommand()
	cmd.SetArgs([]string{"--data-dir", dataDir, "--kube-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	var kube client.Client
	g.Eventually(func(g Gomega) {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "admin.kubeconfig"))
		g.Expect(err).NotTo(HaveOccurred())
		kube, err = client.New(cfg, client.Options{Scheme: platformscheme.Scheme})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(kube.List(ctx, &platformv1.RuntimeProfileList{})).To(Succeed())
	}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())

	g.Eventually(func(g Gomega) {
		profile := &platformv1.RuntimeProfile{}
		g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: platformv1.BuiltinRuntimeProfileName}, profile)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(profile.Status.Conditions, platformv1.ReadyCondition)).To(BeTrue())
		lease := &coordinationv1.Lease{}
		g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: controllers.LeaderElectionID}, lease)).To(Succeed())
		g.Expect(lease.Spec.HolderIdentity).To(HaveValue(Not(BeEmpty())))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(filepath.Join(dataDir, store.FileName)).To(BeARegularFile(), "the SQL store defaults to SQLite in the data directory")

	cancel()
	g.Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
}

// A database that cannot be opened stops `platform serve` with one line that names it without its
// password.
func TestServeFailsWithOneLineWhenTheStoreCannotBeOpened(t *testing.T) {
	g := NewWithT(t)
	cmd := NewServeCommand()
	cmd.SetArgs([]string{"--data-dir", t.TempDir(), "--kube-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--database-url", "postgres://platform:s3cret-pw@127.0.0.1:1/platform?connect_timeout=2"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.ExecuteContext(context.Background())
	g.Expect(err).To(MatchError(ContainSubstring("postgres://platform:xxxxx@127.0.0.1:1/platform")))
	g.Expect(err.Error()).NotTo(ContainSubstring("s3cret-pw"))
	g.Expect(strings.Count(err.Error(), "\n")).To(BeZero())
}
