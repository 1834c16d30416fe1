package work

import (
	"context"
	"database/sql"
)

// ReleaseLeasesOf gives back at once every live lease of owner's workers (owner itself, and
// owner/… as the executor names its workers and reservations) on FlowRuns and Runtime Runs, and
// answers how many it released. Only a process that knows owner is dead may call it: a
// `platform serve` whose predecessor on the same data directory was killed takes over its runs
// now instead of once their leases expire.
func (s *Store) ReleaseLeasesOf(ctx context.Context, owner string) (int64, error) {
	if owner == "" {
		return 0, nil
	}
	// owner/… is the range [owner/, owner0): '0' follows '/' in every collation of ASCII, and a
	// range needs no escaping of LIKE's wildcards in host names.
	args := []any{ms(s.now()), owner, owner + "/", owner + "0"}
	var released int64
	err := s.inTxNotify(ctx, func() []string { return []string{RunnableTopic} }, func(tx *sql.Tx) error {
		released = 0 // a group commit may run this again
		for _, table := range []struct{ name, state string }{{"flow_runs", "state"}, {"runtime_runs", "status"}} {
			res, err := s.txExec(ctx, tx, `UPDATE `+table.name+` SET lease_owner = '', lease_expires_at = 0
				WHERE `+table.state+` IN ('Pending', 'Running') AND lease_expires_at >= ?
				AND (lease_owner = ? OR (lease_owner >= ? AND lease_owner < ?))`, args...)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			released += n
		}
		return nil
	})
	return released, err
}
