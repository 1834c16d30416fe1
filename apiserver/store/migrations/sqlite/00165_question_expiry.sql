-- +goose Up
-- Questions that expire into a declared fallback, and approvals that carry the exact call.
-- on_expiry is what an unanswered question turns into (fail, reject, proceed, escalate), with
-- expiry_default the answer a proceed records and expires_after_ms the length of a new expiry
-- after an escalation (escalated_at, once). remind_at is when the reminder is due; 0 once sent or
-- when none is. resolution says how the question ended (answered, failed, rejected, proceeded).
-- tool_call is what an approval shows of the call it approves: tool, provider, the complete
-- arguments and the digest of that exact call, which the call's approved_digest repeats once
-- approved, so that only that call runs.
ALTER TABLE pending_actions ADD COLUMN on_expiry TEXT NOT NULL DEFAULT 'fail';
ALTER TABLE pending_actions ADD COLUMN expiry_default TEXT;
ALTER TABLE pending_actions ADD COLUMN expires_after_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pending_actions ADD COLUMN remind_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pending_actions ADD COLUMN escalated_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pending_actions ADD COLUMN resolution TEXT NOT NULL DEFAULT '';
ALTER TABLE pending_actions ADD COLUMN tool_call TEXT;
CREATE INDEX pending_actions_remind ON pending_actions (status, remind_at);
ALTER TABLE flow_run_tool_calls ADD COLUMN approved_digest TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE flow_run_tool_calls DROP COLUMN approved_digest;
DROP INDEX pending_actions_remind;
ALTER TABLE pending_actions DROP COLUMN tool_call;
ALTER TABLE pending_actions DROP COLUMN resolution;
ALTER TABLE pending_actions DROP COLUMN escalated_at;
ALTER TABLE pending_actions DROP COLUMN remind_at;
ALTER TABLE pending_actions DROP COLUMN expires_after_ms;
ALTER TABLE pending_actions DROP COLUMN expiry_default;
ALTER TABLE pending_actions DROP COLUMN on_expiry;
