-- +goose Up
-- Correlation: InteractionId -> WorkTaskId -> WorkExecutionId -> FlowRunId -> runtime execution,
-- carried on every record so that one id finds the rest without joins. The WorkTask is the public
-- Task a WorkItem is projected onto (the WorkItem itself unless it continues another Task); the
-- WorkExecution is the WorkItem that executes; a runtime execution is a Runtime Run, or the
-- idempotency key of one Agent step attempt (run/step/attempt).
ALTER TABLE work_items ADD COLUMN work_task_id TEXT NOT NULL DEFAULT '';
ALTER TABLE flow_runs ADD COLUMN work_task_id TEXT NOT NULL DEFAULT '';
ALTER TABLE flow_run_events ADD COLUMN interaction_id TEXT NOT NULL DEFAULT '';
ALTER TABLE flow_run_events ADD COLUMN work_task_id TEXT NOT NULL DEFAULT '';
ALTER TABLE flow_run_events ADD COLUMN work_execution_id TEXT NOT NULL DEFAULT '';
ALTER TABLE flow_run_events ADD COLUMN runtime_execution_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runtime_runs ADD COLUMN interaction_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runtime_runs ADD COLUMN work_task_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runtime_runs ADD COLUMN work_execution_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runtime_runs ADD COLUMN flow_run_id TEXT NOT NULL DEFAULT '';
UPDATE work_items SET work_task_id = id;
UPDATE flow_runs SET work_task_id = work_item_id;
-- The history is append-only; its trigger steps aside once, for the backfill of the new columns.
ALTER TABLE flow_run_events DISABLE TRIGGER flow_run_events_append_only;
UPDATE flow_run_events e SET interaction_id = r.interaction_id, work_task_id = r.work_task_id, work_execution_id = r.work_item_id
    FROM flow_runs r WHERE r.id = e.run_id;
ALTER TABLE flow_run_events ENABLE TRIGGER flow_run_events_append_only;

-- Draft Runs execute a Flow's current draft instead of a published version. The run keeps the
-- exact draft revision it was submitted against (resourceVersion and generation of the Flow),
-- and its snapshot and digest are written at submission (flow_snapshot, flow_digest), so a later
-- edit of the draft never reaches it.
ALTER TABLE work_items ADD COLUMN flow_draft BIGINT NOT NULL DEFAULT 0;
ALTER TABLE flow_runs ADD COLUMN flow_draft BIGINT NOT NULL DEFAULT 0;
ALTER TABLE flow_runs ADD COLUMN flow_revision TEXT NOT NULL DEFAULT '';
ALTER TABLE flow_runs ADD COLUMN flow_generation BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE flow_runs DROP COLUMN flow_generation;
ALTER TABLE flow_runs DROP COLUMN flow_revision;
ALTER TABLE flow_runs DROP COLUMN flow_draft;
ALTER TABLE work_items DROP COLUMN flow_draft;
ALTER TABLE runtime_runs DROP COLUMN flow_run_id;
ALTER TABLE runtime_runs DROP COLUMN work_execution_id;
ALTER TABLE runtime_runs DROP COLUMN work_task_id;
ALTER TABLE runtime_runs DROP COLUMN interaction_id;
ALTER TABLE flow_run_events DROP COLUMN runtime_execution_id;
ALTER TABLE flow_run_events DROP COLUMN work_execution_id;
ALTER TABLE flow_run_events DROP COLUMN work_task_id;
ALTER TABLE flow_run_events DROP COLUMN interaction_id;
ALTER TABLE flow_runs DROP COLUMN work_task_id;
ALTER TABLE work_items DROP COLUMN work_task_id;
