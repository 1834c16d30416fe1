-- +goose Up
-- A question can be answered from any tab or device: a person who may start runs in the
-- workspace asks for a fresh single-use token, whose hash replaces the action's. reissues counts
-- the reissues of the minute that started at reissue_window_at, to bound them.
ALTER TABLE pending_actions ADD COLUMN reissue_window_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pending_actions ADD COLUMN reissues INTEGER NOT NULL DEFAULT 0;
-- The inbox lists a workspace's open questions, oldest first.
CREATE INDEX pending_actions_workspace_open ON pending_actions (workspace_id, status, created_at, id);

-- A question's notification follows its question: resolved (answered, expired or closed) once
-- the question is no longer open.
ALTER TABLE notifications ADD COLUMN pending_action_id TEXT NOT NULL DEFAULT '';
ALTER TABLE notifications ADD COLUMN resolved_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE notifications ADD COLUMN resolution TEXT NOT NULL DEFAULT '';
CREATE INDEX notifications_run ON notifications (run_id) WHERE kind = 'question';
UPDATE notifications SET resolved_at = created_at, attention = 0, resolution = 'closed'
    WHERE kind = 'question' AND NOT EXISTS (
        SELECT 1 FROM pending_actions p WHERE p.run_id = notifications.run_id AND p.status = 'created');

-- +goose Down
DROP INDEX notifications_run;
ALTER TABLE notifications DROP COLUMN resolution;
ALTER TABLE notifications DROP COLUMN resolved_at;
ALTER TABLE notifications DROP COLUMN pending_action_id;
DROP INDEX pending_actions_workspace_open;
ALTER TABLE pending_actions DROP COLUMN reissues;
ALTER TABLE pending_actions DROP COLUMN reissue_window_at;
