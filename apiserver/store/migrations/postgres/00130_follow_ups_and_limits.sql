-- +goose Up
-- What a follow-up does while the conversation's work is in progress, as the Entry declared it
-- when the conversation opened (Enqueue, Reject or Interrupt); the conversations opened before
-- the policy existed enqueue, as they always did.
ALTER TABLE interactions ADD COLUMN follow_up_policy TEXT NOT NULL DEFAULT 'Enqueue';

-- The rate limits' counters, shared by every replica: one row per counter (a limit of a
-- workspace or a token, or the refusals of a workspace) and fixed window, incremented by one
-- upsert per request. Rows expire soon after their window; times are Unix milliseconds (UTC).
CREATE TABLE rate_counters (
    counter      TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    hits         BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    PRIMARY KEY (counter, window_start)
);
CREATE INDEX rate_counters_expiry ON rate_counters (expires_at);

-- +goose Down
DROP TABLE rate_counters;
ALTER TABLE interactions DROP COLUMN follow_up_policy;
