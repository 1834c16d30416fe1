package workapi

import (
	"context"
	"fmt"
	"testing"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	workv1 "platform.dev/platform/apis/work/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/workplace"
)

// benchTasks is the size of the workspace the benchmarks read.
const benchTasks = 10000

// seedTasks writes n Tasks of the workspace in one transaction, a tenth of them completed.
func seedTasks(b *testing.B, s *store.Store, ws string, n int) {
	b.Helper()
	ctx := context.Background()
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UnixMilli()
	const batch = 500
	for start := 0; start < n; start += batch {
		query := `INSERT INTO work_tasks (id, tenant_id, workspace_id, principal_id, title, state, visible, current_run_id, version,
			created_at, updated_at) VALUES `
		var args []any
		for i := start; i < min(start+batch, n); i++ {
			if i > start {
				query += `, `
			}
			query += `(?, 't', ?, 'p', ?, ?, 1, '', 1, ?, ?)`
			state := workplace.TaskRunning
			if i%10 == 0 {
				state = workplace.TaskCompleted
			}
			args = append(args, fmt.Sprintf("t-%06d", i), ws, fmt.Sprintf("Task %d", i), state, now, now)
		}
		if _, err := tx.ExecContext(ctx, s.Rebind(query), args...); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkListTasksAt10000Tasks: one page (kubectl's 500) of a workspace of 10,000 Tasks, all of
// them and those selected by state (a field selector pushed down to SQL).
func BenchmarkListTasksAt10000Tasks(b *testing.B) {
	storetest.ForEachDialectBench(b, func(b *testing.B, s *store.Store) {
		f := newFixture(b, s, WatchLimits{})
		seedTasks(b, s, "default", benchTasks)
		for name, opts := range map[string]*metainternalversion.ListOptions{
			"page-of-500":        {Limit: 500},
			"completed-by-field": {Limit: 500, FieldSelector: fields.OneTermEqualSelector("status.state", workplace.TaskCompleted), LabelSelector: labels.Everything()},
		} {
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					obj, err := f.tasks().List(requestIn("default", "u"), opts)
					if err != nil {
						b.Fatal(err)
					}
					if n := len(obj.(*workv1.TaskList).Items); n != 500 {
						b.Fatalf("%d items, want 500", n)
					}
				}
			})
		}
	})
}

// BenchmarkWatchLatencyAt10000Tasks: from the commit of a Task's change (its outbox event and the
// announcement of its topic) to its arrival at each of 100 watches of a workspace of 10,000
// Tasks.
func BenchmarkWatchLatencyAt10000Tasks(b *testing.B) {
	storetest.ForEachDialectBench(b, func(b *testing.B, s *store.Store) {
		f := newFixture(b, s, WatchLimits{})
		seedTasks(b, s, "default", benchTasks)
		const watchers = 100
		watches := make([]watch.Interface, watchers)
		for i := range watches {
			w, err := f.tasks().Watch(requestIn("default", "u"), &metainternalversion.ListOptions{ResourceVersion: "0",
				SendInitialEvents: new(bool)})
			if err != nil {
				b.Fatal(err)
			}
			watches[i] = w
			defer w.Stop()
		}
		states := []string{workplace.TaskPaused, workplace.TaskRunning}
		i := 0
		for b.Loop() {
			state := states[i%2]
			i++
			f.task("default", "t-000001", state, false)
			for _, w := range watches {
				select {
				case ev := <-w.ResultChan():
					if got := ev.Object.(*workv1.Task).Status.State; got != state {
						b.Fatalf("state %s, want %s", got, state)
					}
				case <-time.After(10 * time.Second):
					b.Fatal("no event within 10s")
				}
			}
		}
	})
}
