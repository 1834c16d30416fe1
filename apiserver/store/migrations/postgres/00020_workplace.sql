-- +goose Up
-- Workplace plane: the conversations (Interactions and their Messages) that Entries open, the
-- public Tasks that work becomes with their activities, Results and artifact metadata, and the
-- Notifications of what needs attention. They are projections of the Work plane's runs, written
-- in the same transactions as the run transitions they describe. Times are Unix milliseconds (BIGINT).

-- A durable conversation opened from a published Entry. submitted holds the exact JSON the
-- caller submitted. target_* are the exact Flow versions pinned at creation: the initial target
-- and the one follow-up messages start (the Entry's continuation target, else the initial one).
-- current_run_id is the latest run of the conversation; last_task_id the Task it works on (NULL
-- once that Task is deleted: the conversation stays). state is Active while a run is in progress
-- or waits for an answer, Idle otherwise, Closed when an Entry cleanup closed it.
CREATE TABLE interactions (
    id                    TEXT PRIMARY KEY,
    tenant_id             TEXT NOT NULL,
    workspace_id          TEXT NOT NULL,
    namespace             TEXT NOT NULL,
    principal_id          TEXT NOT NULL,
    entry_namespace       TEXT NOT NULL,
    entry_name            TEXT NOT NULL,
    entry_generation      BIGINT NOT NULL DEFAULT 0,
    title                 TEXT NOT NULL,
    task_display          TEXT NOT NULL,
    participants          TEXT NOT NULL,
    results_display       TEXT NOT NULL,
    target_namespace      TEXT NOT NULL,
    target_flow           TEXT NOT NULL,
    target_version        TEXT NOT NULL,
    continuation_namespace TEXT NOT NULL,
    continuation_flow     TEXT NOT NULL,
    continuation_version  TEXT NOT NULL,
    submitted             TEXT NOT NULL,
    state                 TEXT NOT NULL CHECK (state IN ('Active', 'Idle', 'Closed')),
    current_run_id        TEXT NOT NULL DEFAULT '',
    last_task_id          TEXT,
    version               BIGINT NOT NULL,
    created_at            BIGINT NOT NULL,
    updated_at            BIGINT NOT NULL
);
CREATE INDEX interactions_workspace ON interactions (workspace_id, updated_at);
CREATE INDEX interactions_entry ON interactions (workspace_id, entry_namespace, entry_name);

-- The functional messages of a conversation, numbered per Interaction. role is a functional
-- label (User, Platform, System), never an identity. kind says what the message carries: text,
-- an answer to a pending action, a run's answer, an error, a visible Result. pending is set on a
-- follow-up accepted while the previous run was still working; its run starts when that ends.
CREATE TABLE interaction_messages (
    id             TEXT PRIMARY KEY,
    interaction_id TEXT NOT NULL REFERENCES interactions (id) ON DELETE CASCADE,
    workspace_id   TEXT NOT NULL,
    seq            BIGINT NOT NULL,
    role           TEXT NOT NULL CHECK (role IN ('User', 'Platform', 'System')),
    kind           TEXT NOT NULL,
    text           TEXT NOT NULL,
    payload        TEXT,
    run_id         TEXT NOT NULL DEFAULT '',
    pending        BIGINT NOT NULL DEFAULT 0,
    created_at     BIGINT NOT NULL,
    UNIQUE (interaction_id, seq)
);
CREATE INDEX interaction_messages_pending ON interaction_messages (interaction_id, pending);

-- A public, living Task: the projection of the work of one anchor WorkItem (id is its
-- WorkTaskId) and of the continuations that work on it. state follows its latest run; version is
-- its ETag. interaction_id is NULL for an autonomous Task (a Trigger's). visible says whether its
-- reference appears in the conversation (the Entry's task.display, or the automatic rules).
CREATE TABLE work_tasks (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL,
    workspace_id    TEXT NOT NULL,
    principal_id    TEXT NOT NULL,
    interaction_id  TEXT,
    title           TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'running', 'paused', 'action-required', 'completed', 'failed', 'cancelled')),
    visible         BIGINT NOT NULL DEFAULT 0,
    current_run_id  TEXT NOT NULL,
    reason          TEXT NOT NULL DEFAULT '',
    milestones      BIGINT NOT NULL DEFAULT 0,
    version         BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    ended_at        BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX work_tasks_workspace ON work_tasks (workspace_id, updated_at);

-- Functional progress of a Task, numbered per Task: a participant's turn (preparing, prepared),
-- a question asked or answered, the end of a run. participant is set only for Entries whose
-- participants are visible.
CREATE TABLE task_activities (
    task_id     TEXT NOT NULL REFERENCES work_tasks (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    phase       TEXT NOT NULL,
    label       TEXT NOT NULL,
    participant TEXT NOT NULL DEFAULT '',
    run_id      TEXT NOT NULL,
    step        TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (task_id, seq)
);

-- Durable Results of a Task, one per completed run that produced one.
CREATE TABLE task_results (
    id         TEXT PRIMARY KEY,
    task_id    TEXT NOT NULL REFERENCES work_tasks (id) ON DELETE CASCADE,
    run_id     TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    action     TEXT NOT NULL,
    text       TEXT NOT NULL,
    payload    TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX task_results_task ON task_results (task_id, seq);

-- Artifact metadata: the bytes are in the artifact store under storage_key, written before the
-- Result or answer that declares them.
CREATE TABLE task_artifacts (
    id           TEXT PRIMARY KEY,
    task_id      TEXT NOT NULL REFERENCES work_tasks (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL,
    result_id    TEXT NOT NULL DEFAULT '',
    name         TEXT NOT NULL,
    media_type   TEXT NOT NULL,
    length       BIGINT NOT NULL,
    storage_key  TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX task_artifacts_task ON task_artifacts (task_id, created_at);

-- Notifications of what needs attention, for one Principal of a workspace. attention marks a
-- question waiting for an answer or a failure; read_at is 0 while unread.
CREATE TABLE notifications (
    id             TEXT PRIMARY KEY,
    workspace_id   TEXT NOT NULL,
    principal_id   TEXT NOT NULL,
    kind           TEXT NOT NULL,
    attention      BIGINT NOT NULL,
    title          TEXT NOT NULL,
    task_id        TEXT,
    interaction_id TEXT,
    run_id         TEXT NOT NULL DEFAULT '',
    read_at        BIGINT NOT NULL DEFAULT 0,
    version        BIGINT NOT NULL,
    created_at     BIGINT NOT NULL
);
CREATE INDEX notifications_recipient ON notifications (workspace_id, principal_id, read_at, created_at);

-- The Task a pending action belongs to, so that an autonomous Task's question is answered on it.
ALTER TABLE pending_actions ADD COLUMN task_id TEXT NOT NULL DEFAULT '';
UPDATE pending_actions SET task_id = (SELECT r.work_task_id FROM flow_runs r WHERE r.id = pending_actions.run_id);

-- The message that started a continuation run, beside its ParentFlowRunId.
ALTER TABLE flow_runs ADD COLUMN trigger_message_id TEXT NOT NULL DEFAULT '';
ALTER TABLE work_items ADD COLUMN trigger_message_id TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE work_items DROP COLUMN trigger_message_id;
ALTER TABLE flow_runs DROP COLUMN trigger_message_id;
ALTER TABLE pending_actions DROP COLUMN task_id;
DROP TABLE notifications;
DROP TABLE task_artifacts;
DROP TABLE task_results;
DROP TABLE task_activities;
DROP TABLE work_tasks;
DROP TABLE interaction_messages;
DROP TABLE interactions;
