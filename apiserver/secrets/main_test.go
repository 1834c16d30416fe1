package secrets_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	"platform.dev/platform/apis/platform/scope"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/controlplane"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/testenv"
)

// The kube API the package's tests share, booted on first use with the secrets admission plugin
// over a tree whose identity store the tests fill (see newWorld). Each test works on namespaces
// and names of its own.
var (
	kubeOnce sync.Once
	kubeEnv  *testenv.Env
	kube     client.Client
	kubeErr  error
	// admissionTree is the tree admission consults; it starts empty (no identity) and newWorld
	// points it at its identity store.
	admissionTree = &switchableTree{}
)

func TestMain(m *testing.M) {
	code := storetest.Run(m)
	if kubeEnv != nil {
		kubeEnv.Stop()
	}
	os.Exit(code)
}

func kubeClient(t *testing.T) client.Client {
	t.Helper()
	kubeOnce.Do(func() {
		kubeEnv, kubeErr = testenv.Start(context.Background(), testenv.Options{Tune: func(o *controlplane.Options) {
			o.Admission = append(o.Admission, &switchableAdmission{Admission: secrets.NewAdmission(admissionTree)})
		}})
		if kubeErr == nil {
			kube, kubeErr = client.New(kubeEnv.Config, client.Options{Scheme: platformscheme.Scheme})
		}
	})
	if kubeErr != nil {
		t.Fatalf("start the kube API: %v", kubeErr)
	}
	return kube
}

// switchableAdmission is the secrets admission plugin that a test can turn off for a while, to
// store objects as a server without it (or before a rule existed) would have.
type switchableAdmission struct {
	*secrets.Admission
}

var admissionOff atomic.Bool

func (a *switchableAdmission) Validate(ctx context.Context, attrs admission.Attributes, o admission.ObjectInterfaces) error {
	if admissionOff.Load() {
		return nil
	}
	return a.Admission.Validate(ctx, attrs, o)
}

// withoutAdmission runs fn with the secrets admission plugin turned off.
func withoutAdmission(fn func()) {
	admissionOff.Store(true)
	defer admissionOff.Store(false)
	fn()
}

// switchableTree lets the shared admission plugin use the identity store of the test that runs.
type switchableTree struct {
	mu   sync.Mutex
	tree secrets.Tree
}

func (s *switchableTree) current() secrets.Tree {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tree == nil {
		return secrets.IdentityTree{}
	}
	return s.tree
}

func (s *switchableTree) set(t secrets.Tree) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tree = t
}

func (s *switchableTree) OfNamespace(ctx context.Context, ns string) (secrets.Place, error) {
	return s.current().OfNamespace(ctx, ns)
}

func (s *switchableTree) Of(ctx context.Context, ref platformv1.ScopeRef) (secrets.Place, error) {
	return s.current().Of(ctx, ref)
}

// world is an identity store with two tenants, A (workspaces a1, a2) and B (workspace b1), the
// kube namespaces of all of them and of the instance, and the tree over them.
type world struct {
	kube   client.Client
	ids    *identity.Service
	tree   secrets.IdentityTree
	places map[string]secrets.Place
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	c := kubeClient(t)
	s, err := store.Open(ctx, store.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	w := &world{kube: c, ids: identity.New(s), places: map[string]secrets.Place{}}
	w.tree = secrets.IdentityTree{Identity: w.ids}
	suffix := randomHex(3)
	for _, tenant := range []struct {
		name       string
		workspaces []string
	}{{"tenantA", []string{"a1", "a2"}}, {"tenantB", []string{"b1"}}} {
		id := randomHex(16)
		if _, err := s.DB().ExecContext(ctx, s.Rebind(`INSERT INTO tenants (id, name, status, created_at) VALUES (?, ?, 'Active', ?)`),
			id, tenant.name, time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		w.places[tenant.name] = w.place(t, scope.Of(scope.Tenant, id).Ref())
		for _, name := range tenant.workspaces {
			ws, err := w.ids.CreateWorkspace(ctx, id, name+"-"+suffix, "")
			if err != nil {
				t.Fatal(err)
			}
			w.places[name] = w.place(t, scope.Of(scope.Workspace, ws.ID).Ref())
		}
	}
	w.places["instance"] = w.place(t, scope.Of(scope.Instance, "").Ref())
	for name, p := range w.places {
		if err := secrets.EnsureScopeNamespace(ctx, c, p); err != nil {
			t.Fatal(err)
		}
		if p.Scope.Kind == scope.Workspace {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace}}
			if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("namespace of %s: %v", name, err)
			}
		}
		if p.Scope.Kind != scope.Instance {
			t.Cleanup(func() {
				c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace}})
			})
		}
	}
	admissionTree.set(w.tree)
	t.Cleanup(func() { admissionTree.set(nil) })
	return w
}

func (w *world) place(t *testing.T, ref platformv1.ScopeRef) secrets.Place {
	t.Helper()
	p, err := w.tree.Of(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// newKey is a fresh master key in Base64.
func newKey() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// openStore opens a migrated SQLite store in a temporary directory.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), store.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
