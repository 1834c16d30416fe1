-- +goose Up
-- Triggers: the durable side of the scheduler. Times are Unix milliseconds (UTC).
--
-- One row per Trigger (by its uid) says up to which scheduled instant its occurrences are decided
-- (cursor_at): after a restart, on another replica or on a retry the scheduler goes on from there.
-- schedule_key and enabled are what the scheduler last saw; a change of the schedule, or an
-- enablement, moves the cursor to that moment, so that nothing is owed for the time before.
-- resumed_at is when the Trigger was last resumed after a pause: failures before it no longer count.
CREATE TABLE trigger_schedules (
    trigger_uid  TEXT PRIMARY KEY,
    namespace    TEXT NOT NULL,
    name         TEXT NOT NULL,
    schedule_key TEXT NOT NULL,
    enabled      BIGINT NOT NULL,
    cursor_at    BIGINT NOT NULL,
    resumed_at   BIGINT NOT NULL DEFAULT 0,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX trigger_schedules_name ON trigger_schedules (namespace, name);

-- Every occurrence of a Trigger. id is derived from the Trigger's uid and the scheduled instant
-- (or, for Run now, from a key of its own), so this primary key refuses a second occurrence of one
-- instant whichever replica, restart or retry attempts it; the WorkItem an occurrence submits has
-- an id derived from the occurrence's, so the key of work_items refuses a second submission too.
-- outcome is Submitted, Skipped, Failed or Missed (the instants up to scheduled_at that the misfire
-- policy did not submit), with reason and message saying why. generation is the Trigger's when it
-- fired: a change of the definition starts a new count of consecutive failures.
CREATE TABLE trigger_occurrences (
    id             TEXT PRIMARY KEY,
    trigger_uid    TEXT NOT NULL,
    namespace      TEXT NOT NULL,
    name           TEXT NOT NULL,
    generation     BIGINT NOT NULL,
    kind           TEXT NOT NULL,
    scheduled_at   BIGINT NOT NULL,
    fired_at       BIGINT NOT NULL,
    outcome        TEXT NOT NULL,
    reason         TEXT NOT NULL DEFAULT '',
    message        TEXT NOT NULL DEFAULT '',
    principal_id   TEXT NOT NULL DEFAULT '',
    workspace_id   TEXT NOT NULL DEFAULT '',
    work_item_id   TEXT,
    work_task_id   TEXT,
    flow_run_id    TEXT,
    flow_namespace TEXT NOT NULL DEFAULT '',
    flow_name      TEXT NOT NULL DEFAULT '',
    flow_version   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX trigger_occurrences_history ON trigger_occurrences (trigger_uid, fired_at);

-- +goose Down
DROP TABLE trigger_occurrences;
DROP TABLE trigger_schedules;
