-- +goose Up
-- The number of each Principal's unread notifications in a workspace, kept with every change of
-- them: counting the unread rows at each notification grew with them.
CREATE TABLE notification_counts (
    workspace_id TEXT NOT NULL,
    principal_id TEXT NOT NULL,
    unread       BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, principal_id)
);
INSERT INTO notification_counts (workspace_id, principal_id, unread)
    SELECT workspace_id, principal_id, COUNT(*) FROM notifications WHERE read_at = 0 GROUP BY workspace_id, principal_id;

-- +goose Down
DROP TABLE notification_counts;
