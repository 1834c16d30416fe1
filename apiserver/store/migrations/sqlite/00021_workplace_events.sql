-- +goose Up
-- The Workplace's outbox: every change of a conversation, a Task or a notification, written in
-- the transaction of the change, numbered per workspace in commit order, for the real-time hub
-- to dispatch after commit. principal_id is set on the events of one Principal's notifications.
-- payload holds ids and versions only: never a resume token or its hash, a prompt or a secret.
CREATE TABLE workplace_event_seqs (
    workspace_id TEXT PRIMARY KEY,
    seq          INTEGER NOT NULL
);

CREATE TABLE workplace_events (
    workspace_id TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    name         TEXT NOT NULL,
    principal_id TEXT NOT NULL DEFAULT '',
    payload      TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, seq)
);
CREATE INDEX workplace_events_age ON workplace_events (created_at);

-- +goose Down
DROP TABLE workplace_events;
DROP TABLE workplace_event_seqs;
