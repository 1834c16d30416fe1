-- +goose Up
-- The identity of this platform installation: exactly one row, written at first start.
CREATE TABLE instance (
    singleton   INTEGER PRIMARY KEY CHECK (singleton = 1),
    instance_id TEXT NOT NULL,
    created_at  DATETIME NOT NULL
);

-- +goose Down
DROP TABLE instance;
