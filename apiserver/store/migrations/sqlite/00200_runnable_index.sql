-- +goose Up
-- Workers look for runnable runs (Pending or Running) only: the runnable indexes hold those
-- alone. A run written already ended (submitted, executed and ended in one commit, as most are)
-- writes no entry, and a look reads past no ended run nor its entry's dead versions.
DROP INDEX flow_runs_runnable;
CREATE INDEX flow_runs_runnable ON flow_runs (lease_expires_at) WHERE state IN ('Pending', 'Running');
DROP INDEX runtime_runs_runnable;
CREATE INDEX runtime_runs_runnable ON runtime_runs (lease_expires_at) WHERE status IN ('Pending', 'Running');

-- +goose Down
DROP INDEX runtime_runs_runnable;
CREATE INDEX runtime_runs_runnable ON runtime_runs (status, lease_expires_at);
DROP INDEX flow_runs_runnable;
CREATE INDEX flow_runs_runnable ON flow_runs (state, lease_expires_at);
