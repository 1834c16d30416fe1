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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/ownerscope"
	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/controlplane"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/testenv"
)

// The world the package's tests share (see newWorld): an identity store, the kube API booted
// with the secrets admission plugin over it, and the namespaces of every place. Each test works
// on names of its own.
var (
	worldOnce   sync.Once
	sharedWorld *world
	worldErr    error
	kubeEnv     *testenv.Env
	worldStore  *store.Store
)

func TestMain(m *testing.M) {
	code := storetest.Run(m)
	if kubeEnv != nil {
		kubeEnv.Stop()
	}
	if worldStore != nil {
		worldStore.Close()
	}
	os.Exit(code)
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
	worldOnce.Do(func() { sharedWorld, worldErr = buildWorld() })
	if worldErr != nil {
		t.Fatalf("the test world: %v", worldErr)
	}
	return sharedWorld
}

func buildWorld() (*world, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "secrets-test-")
	if err != nil {
		return nil, err
	}
	if worldStore, err = store.Open(ctx, store.Options{DataDir: dir}); err != nil {
		return nil, err
	}
	ids := identity.New(worldStore)
	kubeEnv, err = testenv.Start(ctx, testenv.Options{Tune: func(o *controlplane.Options) {
		o.Admission = append(o.Admission, &switchableAdmission{Admission: secrets.NewAdmission(ids)})
	}})
	if err != nil {
		return nil, err
	}
	c, err := client.New(kubeEnv.Config, client.Options{Scheme: platformscheme.Scheme})
	if err != nil {
		return nil, err
	}
	w := &world{kube: c, ids: ids, places: map[string]secrets.Place{}}
	w.tree = secrets.IdentityTree{Identity: ids, Namespaces: secrets.KubeNamespaces(c)}
	for _, tenant := range []struct {
		name       string
		workspaces []string
	}{{"tenantA", []string{"a1", "a2"}}, {"tenantB", []string{"b1"}}} {
		id := randomHex(16)
		if _, err := worldStore.DB().ExecContext(ctx, worldStore.Rebind(`INSERT INTO tenants (id, name, status, created_at) VALUES (?, ?, 'Active', ?)`),
			id, tenant.name, time.Now().UTC()); err != nil {
			return nil, err
		}
		if w.places[tenant.name], err = w.tree.Of(ctx, ownerscope.Of(ownerscope.Tenant, id).Ref()); err != nil {
			return nil, err
		}
		for _, name := range tenant.workspaces {
			ws, err := ids.CreateWorkspace(ctx, id, name, "")
			if err != nil {
				return nil, err
			}
			if w.places[name], err = w.tree.Of(ctx, ownerscope.Of(ownerscope.Workspace, ws.ID).Ref()); err != nil {
				return nil, err
			}
		}
	}
	if w.places["instance"], err = w.tree.Of(ctx, platformv1.InstanceScope); err != nil {
		return nil, err
	}
	for _, p := range w.places {
		if err := secrets.EnsureScopeNamespace(ctx, c, p); err != nil {
			return nil, err
		}
		if p.Scope.Kind == ownerscope.Workspace {
			if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace}}); err != nil {
				return nil, err
			}
		}
	}
	return w, nil
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
