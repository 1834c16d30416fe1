package work

import (
	"context"
	"database/sql"

	"platform.dev/platform/apiserver/notify"
)

// Topics of the changes the store commits, for the subscribers of its hub (Changes).
const (
	// RunnableTopic changes when a FlowRun or Runtime Run may have become runnable: executors
	// subscribe to it instead of waiting for their next poll.
	RunnableTopic = "runnable"
)

// RunTopic changes with every committed transition of the FlowRun.
func RunTopic(runID string) string { return "run/" + runID }

// RuntimeRunTopic changes when the Runtime Run is created or finishes.
func RuntimeRunTopic(id string) string { return "runtime-run/" + id }

// WorkspaceTopic changes with every committed change of the workspace's runs.
func WorkspaceTopic(workspaceID string) string { return "workspace/" + workspaceID }

// Changes is the hub the store notifies of the changes it commits: at once in this process,
// through PostgreSQL for the other replicas once Listen runs (notify.Hub.Listen).
func (s *Store) Changes() *notify.Hub { return s.changes }

// inTxNotify runs fn in a transaction that announces topics: staged inside it for the other
// replicas, published here once it committed.
func (s *Store) inTxNotify(ctx context.Context, topics func() []string, fn func(*sql.Tx) error) error {
	err := s.db.GroupInTx(ctx, func(tx *sql.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return s.changes.Stage(ctx, tx, s.db.Dialect(), topics()...)
	})
	if err == nil {
		s.changes.Publish(topics()...)
	}
	return err
}
