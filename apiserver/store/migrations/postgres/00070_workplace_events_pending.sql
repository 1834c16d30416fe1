-- +goose Up
-- PostgreSQL only: transactions append their outbox events here, unnumbered, and the process
-- that numbers the outbox moves them to workplace_events in the order they were appended. A
-- transaction that took the workspace's next numbers itself held the workspace's counter row
-- until its commit, so every transaction of a busy workspace waited for the one before it.
-- unread_delta is the change of the Principal's unread count that an
-- UnreadNotificationCountChanged event tells: the numbering applies it to notification_counts and
-- writes the count into the payload, so that no transaction holds a count row until its commit
-- either. SQLite runs one writer at a time: there transactions number their events themselves.
CREATE TABLE workplace_events_pending (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    name         TEXT NOT NULL,
    principal_id TEXT NOT NULL DEFAULT '',
    payload      TEXT NOT NULL,
    unread_delta BIGINT,
    created_at   BIGINT NOT NULL
);
-- An unread count is the stored one plus the changes still waiting here.
CREATE INDEX workplace_events_pending_unread ON workplace_events_pending (workspace_id, principal_id)
    WHERE unread_delta IS NOT NULL;

-- +goose Down
DROP TABLE workplace_events_pending;
