package workapi

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	workv1 "platform.dev/platform/apis/work/v1"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/kubeauth"
	"platform.dev/platform/apiserver/notify"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/workplace"
	"platform.dev/platform/internal/resourcenamespace"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// fixture is the group over a fresh store, with a hub of its own that the test announces to as
// the Work store does after a commit.
type fixture struct {
	t       testing.TB
	db      *store.Store
	changes *notify.Hub
	api     *API
}

func newFixture(t testing.TB, s *store.Store, limits WatchLimits) *fixture {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	changes := notify.New(notify.Options{MaxSubscribers: 100000, Buffer: 64})
	api, err := New(ctx, Options{DB: s, Identity: identity.New(s), Changes: changes, Limits: limits, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, db: s, changes: changes, api: api}
}

// ctx is a request of user to the namespace ns (Development mode's workspace: its id is its name).
func requestIn(ns, userName string) context.Context {
	ctx := genericapirequest.WithNamespace(context.Background(), ns)
	return genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: userName})
}

func (f *fixture) exec(query string, args ...any) {
	f.t.Helper()
	if _, err := f.db.DB().ExecContext(context.Background(), f.db.Rebind(query), args...); err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
}

// task writes a Task row, or changes its state, and appends the outbox event that says so, as the
// Workplace projection does in the run's transaction, then announces the workspace's topic.
func (f *fixture) task(ws, id, state string, created bool) {
	f.t.Helper()
	now := time.Now().UnixMilli()
	name := workplace.EventTaskStatusChanged
	if created {
		name = workplace.EventTaskCreated
		f.exec(`INSERT INTO work_tasks (id, tenant_id, workspace_id, principal_id, title, state, visible, current_run_id, version,
			created_at, updated_at) VALUES (?, 't', ?, 'p', ?, ?, 1, '', 1, ?, ?)`, id, ws, "Task "+id, state, now, now)
	} else {
		f.exec(`UPDATE work_tasks SET state = ?, version = version + 1, updated_at = ? WHERE id = ?`, state, now, id)
	}
	f.event(ws, name, map[string]any{"taskId": id, "state": state})
}

func (f *fixture) event(ws, name string, payload map[string]any) {
	f.t.Helper()
	f.eventFor(ws, "", name, payload)
}

// eventFor appends an event addressed to principal ("" for everyone).
func (f *fixture) eventFor(ws, principal, name string, payload map[string]any) {
	f.t.Helper()
	data, _ := json.Marshal(payload)
	f.exec(`INSERT INTO workplace_event_seqs (workspace_id, seq) VALUES (?, 1)
		ON CONFLICT (workspace_id) DO UPDATE SET seq = workplace_event_seqs.seq + 1`, ws)
	f.exec(`INSERT INTO workplace_events (workspace_id, seq, name, principal_id, payload, created_at)
		SELECT ?, seq, ?, ?, ?, ? FROM workplace_event_seqs WHERE workspace_id = ?`, ws, name, principal, string(data), time.Now().UnixMilli(), ws)
	f.changes.Publish(workplace.Topic(ws))
}

// run writes a FlowRun with its WorkItem, or changes the run's state, and appends the outbox
// event that says so, as the Workplace projection does in the run's transaction.
func (f *fixture) run(ws, id, state string, created bool) {
	f.t.Helper()
	now := time.Now().UnixMilli()
	if created {
		f.exec(`INSERT INTO work_items (id, tenant_id, workspace_id, namespace, principal_id, type, title, instruction, flow_name,
			flow_version, flow_run_id, status, work_task_id, created_at, updated_at)
			VALUES (?, 't', ?, ?, 'p', 'work', 'Item', '', 'report', '1.0.0', ?, ?, ?, ?, ?)`, "wi-"+id, ws, ws, id, state, "wi-"+id, now, now)
		f.exec(`INSERT INTO flow_runs (id, work_item_id, tenant_id, workspace_id, namespace, principal_id, work_task_id, flow_name,
			flow_version, state, data, resume_token_hash, version, created_at, updated_at)
			VALUES (?, ?, 't', ?, ?, 'p', ?, 'report', '1.0.0', ?, '{}', '', 1, ?, ?)`, id, "wi-"+id, ws, ws, "wi-"+id, state, now, now)
	} else {
		f.exec(`UPDATE flow_runs SET state = ?, version = version + 1 WHERE id = ?`, state, id)
		f.exec(`UPDATE work_items SET status = ? WHERE flow_run_id = ?`, state, id)
	}
	f.event(ws, workplace.EventFlowRunChanged, map[string]any{"flowRunId": id, "workItemId": "wi-" + id, "taskId": "wi-" + id,
		"state": state, "created": created})
}

func (f *fixture) tasks() *watchableREST {
	return &watchableREST{&readREST{resource: tasksResource, api: f.api}}
}

func next(g Gomega, w watch.Interface) watch.Event {
	var ev watch.Event
	g.Eventually(w.ResultChan()).WithTimeout(10 * time.Second).Should(Receive(&ev))
	return ev
}

// TestAThousandOpenWatchesCostTheStoreNoQueryAndOneChangeIsReadOnceForAllOfThem: watches share
// their workspace's feed, woken by the outbox's topic: while nothing changes, a thousand open
// watches run no statement; a change is read once, however many watches receive it.
func TestAThousandOpenWatchesCostTheStoreNoQueryAndOneChangeIsReadOnceForAllOfThem(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		f := newFixture(t, s, WatchLimits{MaxWatchesPerUser: 2000})
		f.task("default", "t-1", workplace.TaskRunning, true)
		tasks := f.tasks()
		list, err := tasks.List(requestIn("default", "u"), nil)
		g.Expect(err).NotTo(HaveOccurred())
		rv := list.(*workv1.TaskList).ResourceVersion

		const watchers = 1000
		watches := make([]watch.Interface, watchers)
		for i := range watches {
			w, err := tasks.Watch(requestIn("default", "u"), &metainternalversion.ListOptions{ResourceVersion: rv})
			g.Expect(err).NotTo(HaveOccurred())
			watches[i] = w
			defer w.Stop()
		}
		g.Expect(f.api.Watches()).To(Equal(watchers))

		idle := f.api.Queries()
		time.Sleep(2 * time.Second)
		g.Expect(f.api.Queries()).To(Equal(idle), "open watches poll the store")

		f.task("default", "t-1", workplace.TaskCompleted, false)
		for _, w := range watches {
			ev := next(g, w)
			g.Expect(ev.Type).To(Equal(watch.Modified))
			g.Expect(ev.Object.(*workv1.Task).Status.State).To(Equal(workplace.TaskCompleted))
		}
		// One outbox page read, one read of the Task (and an empty page that ends the drain).
		g.Expect(f.api.Queries()-idle).To(BeNumerically("<=", 4), "one change costs a few statements, not one per watch")
	})
}

// TestAWatchResumesFromARecentResourceVersionAndAnOlderOneIsGone: a watch from a list's
// resourceVersion receives what changed after it; once the outbox no longer holds what followed a
// resourceVersion, a watch from it answers 410 Gone (the client lists again).
func TestAWatchResumesFromARecentResourceVersionAndAnOlderOneIsGone(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		f := newFixture(t, s, WatchLimits{})
		f.task("default", "t-1", workplace.TaskRunning, true)
		tasks := f.tasks()
		list, err := tasks.List(requestIn("default", "u"), nil)
		g.Expect(err).NotTo(HaveOccurred())
		rv := list.(*workv1.TaskList).ResourceVersion
		f.task("default", "t-2", workplace.TaskPending, true)
		f.task("default", "t-1", workplace.TaskCompleted, false)

		w, err := tasks.Watch(requestIn("default", "u"), &metainternalversion.ListOptions{ResourceVersion: rv})
		g.Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		first, second := next(g, w), next(g, w)
		g.Expect([]string{string(first.Type) + " " + metaName(first.Object), string(second.Type) + " " + metaName(second.Object)}).
			To(Equal([]string{"ADDED t-2", "MODIFIED t-1"}))

		_, err = workplace.NewStore(s, nil, nil).PruneEvents(context.Background(), time.Now().Add(time.Minute))
		g.Expect(err).NotTo(HaveOccurred())
		_, err = tasks.Watch(requestIn("default", "u"), &metainternalversion.ListOptions{ResourceVersion: rv})
		g.Expect(err).To(MatchError(ContainSubstring("too old resource version")))
	})
}

// TestASelectiveWatchSeesATaskLeaveItsSelection: a watch of the running Tasks receives a Task
// that completes as DELETED, and never a Task that does not match.
func TestASelectiveWatchSeesATaskLeaveItsSelection(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		f := newFixture(t, s, WatchLimits{})
		tasks := f.tasks()
		w, err := tasks.Watch(requestIn("default", "u"), &metainternalversion.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("status.state", workplace.TaskRunning), LabelSelector: labels.Everything()})
		g.Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		f.task("default", "other", workplace.TaskPending, true)
		f.task("default", "t-1", workplace.TaskRunning, true)
		added := next(g, w)
		g.Expect(string(added.Type) + " " + metaName(added.Object)).To(Equal("ADDED t-1"))
		f.task("default", "t-1", workplace.TaskCompleted, false)
		deleted := next(g, w)
		for deleted.Type == watch.Added { // the Task again: the initial list may have read it already
			deleted = next(g, w)
		}
		g.Expect(string(deleted.Type) + " " + metaName(deleted.Object)).To(Equal("DELETED t-1"))
	})
}

// TestListsComeInBoundedPagesThatTogetherHoldEveryTask: a list without a limit answers at most
// maxPage items with a continue token; following the tokens yields every Task once.
func TestListsComeInBoundedPagesThatTogetherHoldEveryTask(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		f := newFixture(t, s, WatchLimits{})
		for i := range 7 {
			f.task("default", fmt.Sprintf("t-%02d", i), workplace.TaskRunning, true)
		}
		f.task("other", "elsewhere", workplace.TaskRunning, true)
		seen := map[string]int{}
		opts := &metainternalversion.ListOptions{Limit: 3}
		pages := 0
		for {
			obj, err := f.tasks().List(requestIn("default", "u"), opts)
			g.Expect(err).NotTo(HaveOccurred())
			list := obj.(*workv1.TaskList)
			g.Expect(len(list.Items)).To(BeNumerically("<=", 3))
			for _, item := range list.Items {
				seen[item.Name]++
			}
			pages++
			if list.Continue == "" {
				break
			}
			opts.Continue = list.Continue
		}
		g.Expect(seen).To(HaveLen(7))
		g.Expect(seen).NotTo(HaveKey("elsewhere"))
		g.Expect(pages).To(Equal(3))
	})
}

// TestWatchesAreBoundedPerCaller: a caller past its share of watches gets 429.
func TestWatchesAreBoundedPerCaller(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		f := newFixture(t, s, WatchLimits{MaxWatchesPerUser: 2})
		for range 2 {
			w, err := f.tasks().Watch(requestIn("default", "u"), nil)
			g.Expect(err).NotTo(HaveOccurred())
			defer w.Stop()
		}
		_, err := f.tasks().Watch(requestIn("default", "u"), nil)
		g.Expect(err).To(MatchError(ContainSubstring("per caller")))
		w, err := f.tasks().Watch(requestIn("default", "someone-else"), nil)
		g.Expect(err).NotTo(HaveOccurred())
		w.Stop()
	})
}

// watchOf is the storage of a kind, as Install serves it.
func (f *fixture) watchOf(plural string) *watchableREST {
	for _, res := range f.api.resources {
		if res.plural == plural {
			return &watchableREST{&readREST{resource: res, api: f.api}}
		}
	}
	f.t.Fatalf("no resource %s", plural)
	return nil
}

// requestOf is a request of the Principal principal to the namespace ns.
func requestOf(ns, principal string) context.Context {
	ctx := genericapirequest.WithNamespace(context.Background(), ns)
	return genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "platform:principal:" + principal,
		Extra: map[string][]string{kubeauth.ExtraPrincipalID: {principal}}})
}

// TestEveryKindIsWatchedFromTheOutbox: FlowRuns and WorkItems follow their run's transitions,
// TriggerOccurrences their recording and Notifications their Principal's events, at outbox
// positions like Tasks; a Principal's watch of Notifications never receives another's.
func TestEveryKindIsWatchedFromTheOutbox(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, WatchLimits{})
		notification := func(id, principal string) {
			f.exec(`INSERT INTO notifications (id, workspace_id, principal_id, kind, attention, title, version, created_at)
				VALUES (?, 'default', ?, 'task-completed', 1, 'Done', 1, ?)`, id, principal, time.Now().UnixMilli())
			f.eventFor("default", principal, workplace.EventNotificationCreated, map[string]any{"notificationId": id})
		}
		cases := map[string]struct {
			plural    string
			principal string
			// steps are changes, each seen by the watch as the event at the same place in want.
			steps []func()
			want  []string
		}{
			"a FlowRun is added, then modified by each transition": {plural: "flowruns",
				steps: []func(){func() { f.run("default", "r-1", "Running", true) }, func() { f.run("default", "r-1", "Completed", false) }},
				want:  []string{"ADDED r-1 Running", "MODIFIED r-1 Completed"}},
			"a WorkItem follows its run's state": {plural: "workitems",
				steps: []func(){func() { f.run("default", "r-2", "Running", true) }, func() { f.run("default", "r-2", "Failed", false) }},
				want:  []string{"ADDED wi-r-2 Running", "MODIFIED wi-r-2 Failed"}},
			"a TriggerOccurrence is added when it is recorded": {plural: "triggeroccurrences",
				steps: []func(){func() {
					f.exec(`INSERT INTO trigger_occurrences (id, trigger_uid, namespace, name, generation, kind, scheduled_at, fired_at, outcome,
						workspace_id) VALUES ('o-1', 'uid', 'default', 'nightly', 1, 'Scheduled', 1, 1, 'Skipped', 'default')`)
					f.event("default", workplace.EventTriggerOccurrenceRecorded, map[string]any{"triggerOccurrenceId": "o-1"})
				}},
				want: []string{"ADDED o-1 Skipped"}},
			"a Principal's watch of Notifications receives theirs only": {plural: "notifications", principal: "alice",
				steps: []func(){func() {
					notification("n-bob", "bob")
					notification("n-alice", "alice")
				}, func() {
					f.exec(`UPDATE notifications SET read_at = 1, version = 2 WHERE id = 'n-alice'`)
					f.eventFor("default", "alice", workplace.EventNotificationRead, map[string]any{"notificationId": "n-alice"})
				}},
				want: []string{"ADDED n-alice false", "MODIFIED n-alice true"}},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				principal := tc.principal
				if principal == "" {
					principal = "someone"
				}
				w, err := f.watchOf(tc.plural).Watch(requestOf("default", principal), &metainternalversion.ListOptions{
					ResourceVersion: "0", SendInitialEvents: new(bool)})
				g.Expect(err).NotTo(HaveOccurred())
				defer w.Stop()
				var got []string
				for _, step := range tc.steps {
					step()
					ev := next(g, w)
					got = append(got, string(ev.Type)+" "+metaName(ev.Object)+" "+stateOf(ev.Object))
				}
				g.Expect(got).To(Equal(tc.want))
				g.Consistently(w.ResultChan()).WithTimeout(300*time.Millisecond).ShouldNot(Receive(), "nothing else, nobody else's")
			})
		}
	})
}

func stateOf(obj runtime.Object) string {
	switch o := obj.(type) {
	case *workv1.FlowRun:
		return o.Status.State
	case *workv1.WorkItem:
		return o.Status.State
	case *workv1.TriggerOccurrence:
		return o.Status.Outcome
	case *workv1.Notification:
		return fmt.Sprint(o.Status.Read)
	}
	return ""
}

// TestADeletePreconditionComparesTheRowsVersionAndOutlivesThePruningOfTheOutbox: the
// resourceVersion a Task was read with is a delete's precondition for as long as the Task is
// unchanged, even after the outbox was pruned; once the Task changed, it conflicts; a list's
// position, which names no object's version, conflicts too.
func TestADeletePreconditionComparesTheRowsVersionAndOutlivesThePruningOfTheOutbox(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, WatchLimits{})
		f.task("default", "t-1", workplace.TaskRunning, true)
		f.task("default", "t-1", workplace.TaskCompleted, false)
		f.task("default", "t-2", workplace.TaskCompleted, true)
		tasks := &taskREST{f.tasks()}
		read := func(name string) string {
			obj, err := tasks.Get(requestIn("default", "u"), name, nil)
			if err != nil {
				t.Fatal(err)
			}
			return obj.(*workv1.Task).ResourceVersion
		}
		unchanged, changed := read("t-1"), read("t-2")
		list, err := tasks.List(requestIn("default", "u"), nil)
		if err != nil {
			t.Fatal(err)
		}
		position := list.(*workv1.TaskList).ResourceVersion
		f.task("default", "t-2", workplace.TaskCompleted, false) // a new version of t-2
		_, err = workplace.NewStore(s, nil, nil).PruneEvents(context.Background(), time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}

		for name, tc := range map[string]struct {
			task, resourceVersion string
			wantErr               string
		}{
			"an unchanged Task's resourceVersion holds after the outbox was pruned": {task: "t-1", resourceVersion: unchanged},
			"a changed Task's resourceVersion conflicts":                            {task: "t-2", resourceVersion: changed, wantErr: "the object changed"},
			"a list's position is no object's resourceVersion":                      {task: "t-1", resourceVersion: position, wantErr: "not an object's"},
		} {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				rv := tc.resourceVersion
				_, _, err := tasks.Delete(requestIn("default", "u"), tc.task, nil, &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll},
					Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
				if tc.wantErr == "" {
					g.Expect(err).NotTo(HaveOccurred())
					return
				}
				g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "%v", err)
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
			})
		}
	})
}

// TestAListAndAWatchAcrossNamespacesShowTheWorkspacesTheCallerReadsOnly: `kubectl get tasks -A`
// lists, page by page, the Tasks of the workspaces where the caller may read runs and never
// another's; a watch from that list's resourceVersion receives the changes of those workspaces
// only.
func TestAListAndAWatchAcrossNamespacesShowTheWorkspacesTheCallerReadsOnly(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		f := newFixture(t, s, WatchLimits{})
		f.api.Readable = func(_ context.Context, u user.Info) ([]identity.Workspace, bool, error) {
			return []identity.Workspace{{ID: "ws-b", RouteName: "beta"}, {ID: "ws-a", RouteName: "alpha"}}, false, nil
		}
		f.task("ws-a", "a-1", workplace.TaskRunning, true)
		f.task("ws-a", "a-2", workplace.TaskRunning, true)
		f.task("ws-b", "b-1", workplace.TaskRunning, true)
		f.task("ws-c", "c-1", workplace.TaskRunning, true)
		everywhere := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "u"})

		var seen []string
		opts := &metainternalversion.ListOptions{Limit: 2}
		var rv string
		for pages := 0; ; pages++ {
			g.Expect(pages).To(BeNumerically("<", 4))
			obj, err := f.tasks().List(everywhere, opts)
			g.Expect(err).NotTo(HaveOccurred())
			list := obj.(*workv1.TaskList)
			if rv == "" {
				rv = list.ResourceVersion
			}
			for _, item := range list.Items {
				seen = append(seen, item.Namespace+"/"+item.Name)
			}
			if list.Continue == "" {
				break
			}
			opts.Continue = list.Continue
		}
		g.Expect(seen).To(Equal([]string{"alpha/a-2", "alpha/a-1", "beta/b-1"}), "by namespace, newest first, never ws-c's")

		w, err := f.tasks().Watch(everywhere, &metainternalversion.ListOptions{ResourceVersion: rv})
		g.Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		f.task("ws-c", "c-1", workplace.TaskCompleted, false)
		f.task("ws-b", "b-1", workplace.TaskCompleted, false)
		f.task("ws-a", "a-1", workplace.TaskCompleted, false)
		got := map[string]string{}
		for range 2 {
			ev := next(g, w)
			task := ev.Object.(*workv1.Task)
			got[task.Namespace+"/"+task.Name] = string(ev.Type) + " " + task.Status.State
		}
		g.Expect(got).To(Equal(map[string]string{"alpha/a-1": "MODIFIED completed", "beta/b-1": "MODIFIED completed"}))
		g.Consistently(w.ResultChan()).WithTimeout(300*time.Millisecond).ShouldNot(Receive(), "nothing of ws-c")
		g.Expect(f.api.Watches()).To(Equal(2), "one watch of each workspace's feed")
		w.Stop()
		g.Eventually(w.ResultChan()).WithTimeout(5 * time.Second).Should(BeClosed())
		g.Eventually(f.api.Watches).WithTimeout(5*time.Second).Should(BeZero(), "stopping it stops every workspace's watch")

		_, err = f.tasks().Watch(everywhere, &metainternalversion.ListOptions{ResourceVersion: "3.1"})
		g.Expect(apierrors.IsResourceExpired(err) || apierrors.IsGone(err)).To(BeTrue(), "one workspace's position: list again (%v)", err)
	})
}

// TestTheWorkOfAPacksEntryIsListedInItsWorkspacesNamespaceNamedAfterItsResourceNamespace: Work
// rows belong to the workspace, not to a resource namespace, so the Task and Interaction of an
// Entry that a Pack installed in acme.reports are listed in the workspace's own namespace, with
// status.entry acme.reports/report, which tells them from those of the workspace's own Entry
// report and selects them; the Pack's kube namespace, where its Management kinds live, holds none.
func TestTheWorkOfAPacksEntryIsListedInItsWorkspacesNamespaceNamedAfterItsResourceNamespace(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		f := newFixture(t, s, WatchLimits{})
		now := time.Now().UnixMilli()
		for _, c := range []struct{ interaction, task, rns string }{{"i-pack", "t-pack", "acme.reports"}, {"i-own", "t-own", "default"}} {
			f.exec(`INSERT INTO interactions (id, tenant_id, workspace_id, namespace, principal_id, entry_namespace, entry_name, title,
				task_display, participants, results_display, target_namespace, target_flow, target_version, continuation_namespace,
				continuation_flow, continuation_version, submitted, state, last_task_id, version, created_at, updated_at)
				VALUES (?, 't', 'default', 'default', 'p', ?, 'report', 'report: Q4', 'Visible', 'Hidden', 'Inline',
				'default', 'report', '1.0.0', 'default', 'report', '1.0.0', '{}', 'Active', ?, 1, ?, ?)`,
				c.interaction, c.rns, c.task, now, now)
			f.task("default", c.task, workplace.TaskRunning, true)
			f.exec(`UPDATE work_tasks SET interaction_id = ? WHERE id = ?`, c.interaction, c.task)
		}
		entries := func(ns string, selector fields.Selector) map[string]string {
			obj, err := f.tasks().List(requestIn(ns, "u"), &metainternalversion.ListOptions{FieldSelector: selector})
			g.Expect(err).NotTo(HaveOccurred())
			out := map[string]string{}
			for _, task := range obj.(*workv1.TaskList).Items {
				out[task.Namespace+"/"+task.Name] = task.Status.Entry
			}
			return out
		}
		g.Expect(entries("default", nil)).To(Equal(map[string]string{"default/t-pack": "acme.reports/report", "default/t-own": "report"}))
		g.Expect(entries("default", fields.OneTermEqualSelector("status.entry", "acme.reports/report"))).To(HaveKey("default/t-pack"))
		g.Expect(entries("default", fields.OneTermEqualSelector("status.entry", "acme.reports/report"))).To(HaveLen(1))
		g.Expect(entries("default", fields.OneTermEqualSelector("status.entry", "report"))).To(Equal(map[string]string{"default/t-own": "report"}))
		interactions, err := f.watchOf("interactions").List(requestIn("default", "u"), &metainternalversion.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("status.entry", "acme.reports/report")})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(interactions.(*workv1.InteractionList).Items).To(HaveLen(1))
		g.Expect(interactions.(*workv1.InteractionList).Items[0].Name).To(Equal("i-pack"))

		g.Expect(entries(packNamespace, nil)).To(BeEmpty(), "the Pack's namespace holds no Work")
		_, err = f.tasks().Get(requestIn(packNamespace, "u"), "t-pack", nil)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	})
}

// packNamespace is the kube namespace of the resource namespace acme.reports of the workspace
// default.
var packNamespace = resourcenamespace.KubeName("default", "acme.reports")

// TestAWatchListAcrossNoWorkspaceEndsItsInitialEventsAtOnce: a caller who reads no workspace
// asks for the initial events across namespaces (as an informer does) and gets their end at
// once, not a wait without end.
func TestAWatchListAcrossNoWorkspaceEndsItsInitialEventsAtOnce(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		f := newFixture(t, s, WatchLimits{})
		f.api.Readable = func(context.Context, user.Info) ([]identity.Workspace, bool, error) { return nil, false, nil }
		w, err := f.tasks().Watch(genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "u"}),
			&metainternalversion.ListOptions{SendInitialEvents: ptr(true), AllowWatchBookmarks: true})
		g.Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		ev := next(g, w)
		g.Expect(ev.Type).To(Equal(watch.Bookmark))
		g.Expect(metaOf(ev.Object).GetAnnotations()).To(HaveKeyWithValue(metav1.InitialEventsAnnotationKey, "true"))
	})
}

func ptr[T any](v T) *T { return &v }

// usage records model calls of run, as the executor does with the calls' outcome.
func (f *fixture) usage(ws, run string, calls ...[3]any) {
	f.t.Helper()
	for i, c := range calls {
		f.exec(`INSERT INTO model_usage (id, workspace_id, run_id, step, attempt, agent, model, input_tokens, output_tokens, cost_micros,
			currency, day, created_at) VALUES (?, ?, ?, 'ask', 1, 'assistant', 'gpt-test', ?, 10, ?, ?, '2026-11-27', ?)`,
			fmt.Sprintf("%s-call-%d", run, i), ws, run, c[0], c[1], c[2], time.Now().UnixMilli()+int64(i))
	}
}

// TestARunAndATaskShowTheUsageOfTheirModelCallsAndAPageReadsItInOneStatement: a FlowRun's
// status.usage is its calls' as the service API's read of the run shows it (cost in the latest
// priced call's currency, costs in each), a Task's the sum of its runs', the tables show the
// tokens (and the costs in -o wide), and a page of runs reads its usage in one statement however
// many runs it holds.
func TestARunAndATaskShowTheUsageOfTheirModelCallsAndAPageReadsItInOneStatement(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		f := newFixture(t, s, WatchLimits{})
		f.run("default", "r-1", "Completed", true)
		f.run("default", "r-2", "Running", true)
		f.task("default", "wi-r-1", workplace.TaskCompleted, true)
		f.usage("default", "r-1", [3]any{100, 1000, "USD"}, [3]any{50, 500, "EUR"}, [3]any{7, 0, ""})
		f.usage("other", "r-elsewhere", [3]any{100, 1000, "USD"})
		want := &workv1.ModelUsage{ModelCalls: 3, InputTokens: 157, OutputTokens: 30, TotalTokens: 187,
			Cost:  &workv1.Money{Amount: "0.000500", Currency: "EUR"},
			Costs: []workv1.Money{{Amount: "0.000500", Currency: "EUR"}, {Amount: "0.001000", Currency: "USD"}}}

		runs := f.watchOf("flowruns")
		obj, err := runs.Get(requestIn("default", "u"), "r-1", &metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(obj.(*workv1.FlowRun).Status.Usage).To(Equal(want))

		before := f.api.Queries()
		obj, err = runs.List(requestIn("default", "u"), nil)
		g.Expect(err).NotTo(HaveOccurred())
		onePage := f.api.Queries() - before
		list := obj.(*workv1.FlowRunList)
		g.Expect(list.Items).To(HaveLen(2))
		byName := map[string]*workv1.ModelUsage{}
		for _, item := range list.Items {
			byName[item.Name] = item.Status.Usage
		}
		g.Expect(byName["r-1"]).To(Equal(want))
		g.Expect(byName["r-2"]).To(Equal(&workv1.ModelUsage{}), "a run without model calls used nothing")

		for i := range 20 {
			f.run("default", fmt.Sprintf("r-more-%02d", i), "Completed", true)
			f.usage("default", fmt.Sprintf("r-more-%02d", i), [3]any{1, 1, "USD"})
		}
		before = f.api.Queries()
		obj, err = runs.List(requestIn("default", "u"), nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(obj.(*workv1.FlowRunList).Items).To(HaveLen(22))
		g.Expect(f.api.Queries()-before).To(Equal(onePage), "a page's usage is one statement, not one per run")

		table, err := runs.ConvertToTable(context.Background(), list, nil)
		g.Expect(err).NotTo(HaveOccurred())
		columns := map[string]int{}
		for i, c := range table.ColumnDefinitions {
			columns[c.Name] = i
		}
		g.Expect(table.Rows[slicesIndex(list.Items, "r-1")].Cells[columns["Tokens"]]).To(Equal(int64(187)))
		g.Expect(table.Rows[slicesIndex(list.Items, "r-1")].Cells[columns["Cost"]]).To(Equal("0.0005 EUR, 0.001 USD"))
		g.Expect(table.ColumnDefinitions[columns["Cost"]].Priority).To(Equal(int32(1)), "costs show in -o wide")

		obj, err = f.tasks().Get(requestIn("default", "u"), "wi-r-1", &metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(obj.(*workv1.Task).Status.Usage).To(Equal(want), "a Task's usage is its runs'")
		obj, err = f.tasks().List(requestIn("default", "u"), nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(obj.(*workv1.TaskList).Items[0].Status.Usage).To(Equal(want))
	})
}

func slicesIndex(items []workv1.FlowRun, name string) int {
	for i, item := range items {
		if item.Name == name {
			return i
		}
	}
	return -1
}
