package apiserver

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
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

// syncBuffer collects what a command prints while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServe runs `platform serve` in-process on free ports with extra flags and returns the
// service API's base URL, an administrator's kube client and the command's result channel.
func startServe(t *testing.T, ctx context.Context, dataDir string, extra ...string) (string, client.Client, <-chan error) {
	t.Helper()
	g := NewWithT(t)
	out := &syncBuffer{}
	cmd := NewServeCommand()
	cmd.SetArgs(append([]string{"--data-dir", dataDir, "--kube-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, extra...))
	cmd.SetOut(out)
	cmd.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	var base string
	g.Eventually(func(g Gomega) {
		m := regexp.MustCompile(`service API ready at (http://\S+)`).FindStringSubmatch(out.String())
		g.Expect(m).To(HaveLen(2))
		base = m[1]
	}).WithTimeout(time.Minute).WithPolling(50 * time.Millisecond).Should(Succeed())
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "admin.kubeconfig"))
	g.Expect(err).NotTo(HaveOccurred())
	kube, err := client.New(cfg, client.Options{Scheme: platformscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return base, kube, done
}

// A lost leader election Lease never ends `platform serve`: the controllers step down while the
// service API keeps answering, campaign again, and reconcile once they hold the Lease again.
func TestServeKeepsServingWhenTheControllersLoseTheirLease(t *testing.T) {
	g := NewWithT(t)
	dataDir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, kube, done := startServe(t, ctx, dataDir,
		"--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline", "1s", "--leader-elect-retry-period", "200ms")

	leaseKey := client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: controllers.LeaderElectionID}
	lease := &coordinationv1.Lease{}
	g.Eventually(func(g Gomega) {
		g.Expect(kube.Get(ctx, leaseKey, lease)).To(Succeed())
		g.Expect(lease.Spec.HolderIdentity).To(HaveValue(Not(BeEmpty())))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	holder := *lease.Spec.HolderIdentity

	// Another holder takes the Lease over for 4 s, as a replica would after a stalled renewal. The
	// holder renews it every 200 ms, so the takeover reads it again after a conflict, as a replica
	// does.
	g.Eventually(func(g Gomega) {
		g.Expect(kube.Get(ctx, leaseKey, lease)).To(Succeed())
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = ptr.To("another-replica"), ptr.To[int32](4)
		lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
		g.Expect(kube.Update(ctx, lease)).To(Succeed())
	}).WithTimeout(10 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())

	// For longer than the renew deadline the process stays up and the service API answers.
	g.Consistently(func(g Gomega) {
		g.Expect(done).NotTo(Receive())
		resp, err := http.Get(base + "/livez")
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	}).WithTimeout(3 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	// Once the other holder's Lease expires, the controllers hold it again and reconcile.
	g.Eventually(func(g Gomega) {
		g.Expect(kube.Get(ctx, leaseKey, lease)).To(Succeed())
		g.Expect(lease.Spec.HolderIdentity).To(HaveValue(Equal(holder)))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "after-the-lost-lease"}}
	g.Expect(kube.Create(ctx, ns)).To(Succeed())
	g.Eventually(func() error {
		return kube.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: platformv1.BuiltinRuntimeProfileName}, &platformv1.RuntimeProfile{})
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(done).NotTo(Receive())

	cancel()
	g.Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
}

// The data directory and everything in it, the SQLite store and its WAL included, are private
// to the user, also when an older release left them readable by others.
func TestServeKeepsTheDataDirectoryOwnerOnly(t *testing.T) {
	g := NewWithT(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	g.Expect(os.MkdirAll(dataDir, 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dataDir, "left-by-an-older-release"), []byte("x"), 0o644)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, _, done := startServe(t, ctx, dataDir)

	g.Expect(filepath.Join(dataDir, store.FileName+"-wal")).To(BeARegularFile(), "the store runs in WAL mode")
	var checked []string
	g.Expect(filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		g.Expect(info.Mode().Perm()&0o077).To(BeZero(), "%s is %s", path, info.Mode())
		checked = append(checked, filepath.Base(path))
		return nil
	})).To(Succeed())
	g.Expect(checked).To(ContainElements("data", store.FileName, store.FileName+"-wal", "etcd", "pki", "admin.kubeconfig", "left-by-an-older-release"))

	cancel()
	g.Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
}

// What a user adds to <data-dir>/admin.kubeconfig (credentials, contexts, the current context)
// survives a restart; the platform's own entries follow the new address.
func TestServeKeepsWhatTheUserAddedToTheKubeconfig(t *testing.T) {
	g := NewWithT(t)
	dataDir := t.TempDir()
	path := filepath.Join(dataDir, "admin.kubeconfig")
	ctx, cancel := context.WithCancel(context.Background())
	_, _, done := startServe(t, ctx, dataDir)
	cancel()
	g.Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))

	// As `kubectl config set-credentials me --token=...`, `set-context me` and `use-context me`.
	cfg, err := clientcmd.LoadFromFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	first := cfg.Clusters["platform"].Server
	cfg.AuthInfos["me"] = &clientcmdapi.AuthInfo{Token: "platform_pat_example"}
	cfg.Contexts["me"] = &clientcmdapi.Context{Cluster: "platform", AuthInfo: "me", Namespace: "team"}
	cfg.CurrentContext = "me"
	g.Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	_, _, done = startServe(t, ctx, dataDir)
	cfg, err = clientcmd.LoadFromFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.AuthInfos).To(HaveKey("me"))
	g.Expect(cfg.Contexts).To(HaveKeyWithValue("me", HaveField("Namespace", "team")))
	g.Expect(cfg.CurrentContext).To(Equal("me"))
	g.Expect(cfg.Clusters["platform"].Server).NotTo(Equal(first), "the platform's entry follows the new port")
	info, err := os.Stat(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
	cancel()
	g.Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
}

func TestTheExecutorsNameInADataDirectoryIsKeptAcrossStartsAndNeverEmpty(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	first, err := dataDirExecutorOwner(dir)
	g.Expect(err).NotTo(HaveOccurred())
	again, err := dataDirExecutorOwner(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(first), "the next start names its leases the same")
	host, _ := os.Hostname()
	g.Expect(strings.TrimPrefix(first, host+"/")).To(MatchRegexp(`^[0-9a-f]{16}$`))

	g.Expect(os.WriteFile(filepath.Join(dir, executorOwnerFile), []byte("\n"), 0o600)).To(Succeed())
	fresh, err := dataDirExecutorOwner(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.TrimPrefix(fresh, host+"/")).To(MatchRegexp(`^[0-9a-f]{16}$`), "an empty file names nothing: a fresh id replaces it")
}
