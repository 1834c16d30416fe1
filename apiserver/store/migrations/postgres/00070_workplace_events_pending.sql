-- +goose Up
-- PostgreSQL only: transactions append their outbox events here, unnumbered, and the process
-- that numbers the outbox moves them to workplace_events in the order they became visible. A
-- transaction that took the workspace's next numbers itself held the workspace's counter row
-- until its commit, so every transaction of a busy workspace waited for the one before it.
-- SQLite runs one writer at a time: there transactions number their events themselves.
CREATE TABLE workplace_events_pending (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    name         TEXT NOT NULL,
    principal_id TEXT NOT NULL DEFAULT '',
    payload      TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);

-- +goose Down
DROP TABLE workplace_events_pending;
