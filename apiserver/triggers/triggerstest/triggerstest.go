// Package triggerstest builds what tests of Triggers fire against without a control plane: a
// workspace namespace with a published Flow in a fake kube client, a Work store on a test
// database, and the Trigger service over them with an authorization the test controls.
package triggerstest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/triggers"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/apiserver/workplace"
)

// Workspace is the namespace (and workspace route name) of the fixture; FlowName its Flow.
const (
	Workspace   = "acme"
	WorkspaceID = "ws-acme"
	FlowName    = "report"
	Owner       = "principal-owner"
)

// Env is a Trigger service over a fake kube API and a Work store.
type Env struct {
	Kube      client.Client
	Work      *work.Store
	Workplace *workplace.Store
	Service   *triggers.Service
	// Authorized lists the Principals that hold runs/execute in the workspace; the test revokes
	// one by removing it.
	mu         sync.Mutex
	authorized map[string]bool
}

// New builds the environment on db; objects are added to the fixture's kube objects.
func New(t *testing.T, db *store.Store, objects ...client.Object) *Env {
	t.Helper()
	enabled := true
	base := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Workspace}},
		&platformv1.Flow{ObjectMeta: metav1.ObjectMeta{Namespace: Workspace, Name: FlowName},
			Definition: platformv1.FlowDefinition{FlowKind: platformv1.DirectFlow, Enabled: &enabled},
			Status:     platformv1.FlowStatus{ActiveVersion: "1.0.0"}},
		&platformv1.FlowVersion{ObjectMeta: metav1.ObjectMeta{Namespace: Workspace, Name: FlowName + "-1.0.0"},
			Definition: platformv1.FlowVersionDefinition{FlowName: FlowName, Version: "1.0.0"}},
	}
	kube := fake.NewClientBuilder().WithScheme(platformscheme.Scheme).WithObjects(append(base, objects...)...).
		WithStatusSubresource(&platformv1.Trigger{}, &platformv1.Flow{}).Build()
	env := &Env{Kube: kube, Work: work.New(db), authorized: map[string]bool{Owner: true}}
	env.Workplace = workplace.NewStore(db, env.Work, workplace.FileArtifacts{Dir: t.TempDir()})
	env.Work.Observer = env.Workplace
	env.Service = &triggers.Service{DB: db, Work: env.Work, Kube: kube, Access: env.access}
	return env
}

func (e *Env) access(_ context.Context, principalID, workspace string) (work.Context, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if workspace != Workspace || !e.authorized[principalID] {
		return work.Context{}, fmt.Errorf("its roles in the workspace do not grant runs/execute: %w", triggers.ErrNotAuthorized)
	}
	return work.Context{TenantID: "tenant", WorkspaceID: WorkspaceID, PrincipalID: principalID}, nil
}

// Authorize grants or revokes runs/execute of principalID in the workspace.
func (e *Env) Authorize(principalID string, granted bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.authorized[principalID] = granted
}

// Trigger is a Trigger of the fixture's workspace owned by Owner, targeting its Flow, stored in
// the fake kube API; change adjusts it before it is created.
func (e *Env) Trigger(t *testing.T, name string, sched platformv1.TriggerSchedule, created time.Time, change func(*platformv1.Trigger)) *platformv1.Trigger {
	t.Helper()
	tr := &platformv1.Trigger{
		ObjectMeta: metav1.ObjectMeta{Namespace: Workspace, Name: name, UID: types.UID("uid-" + name), Generation: 1,
			CreationTimestamp: metav1.Time{Time: created}, Annotations: map[string]string{platformv1.TriggerOwnerAnnotation: Owner}},
		Definition: platformv1.TriggerDefinition{
			DisplayName: "Report " + name,
			Source:      platformv1.TriggerSource{Kind: platformv1.ScheduleTriggerSource, Schedule: &sched},
			Target: platformv1.TriggerTarget{Kind: platformv1.FlowTriggerTarget, Flow: &platformv1.FlowReference{Name: FlowName},
				Input: &runtime.RawExtension{Raw: []byte(`{"request":"the weekly report"}`)}},
			MisfirePolicy: platformv1.FireOnceMisfire, ConcurrencyPolicy: platformv1.AllowConcurrency,
		},
	}
	if change != nil {
		change(tr)
	}
	if err := e.Kube.Create(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	// The fake client keeps the fields the test set (uid, creation) as a kube API would have.
	return tr
}

// WorkItems are the WorkItems of the Trigger's occurrences, by id.
func (e *Env) WorkItems(t *testing.T, uid string) map[string]work.WorkItem {
	t.Helper()
	list, err := e.Service.Occurrences(context.Background(), uid, 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]work.WorkItem{}
	for _, o := range list {
		if o.WorkItemID == "" {
			continue
		}
		item, err := e.Work.WorkItem(context.Background(), WorkspaceID, o.WorkItemID)
		if err != nil {
			t.Fatal(err)
		}
		out[item.ID] = item
	}
	return out
}
