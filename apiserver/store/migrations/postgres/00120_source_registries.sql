-- +goose Up
-- Source registries: what refreshes cached, their durable history, and the integrity records.
-- A registration is a SourceRegistry kube object; these rows name it by its UID, so deleting the
-- registration keeps its cache and history for provenance. Times are Unix milliseconds (UTC).

-- One complete observation per successful refresh: the index as fetched, with its validators,
-- serial and canonical digest. Cleanup keeps the configured number and never the current one.
CREATE TABLE registry_observations (
    id               TEXT PRIMARY KEY,
    registration_uid TEXT NOT NULL,
    index_url        TEXT NOT NULL,
    serial           BIGINT NOT NULL,
    index_digest     TEXT NOT NULL,
    index_document   BYTEA NOT NULL,
    etag             TEXT NOT NULL DEFAULT '',
    last_modified    TEXT NOT NULL DEFAULT '',
    fetched_at       BIGINT NOT NULL,
    validated_at     BIGINT NOT NULL
);
CREATE INDEX registry_observations_registration ON registry_observations (registration_uid, fetched_at);

-- The shards of an observation; a shard whose digest did not change is copied from the previous
-- observation instead of fetched again.
CREATE TABLE registry_observation_shards (
    observation_id TEXT NOT NULL REFERENCES registry_observations (id) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    digest         TEXT NOT NULL,
    document       BYTEA NOT NULL,
    PRIMARY KEY (observation_id, name)
);

-- Per registration: the current (last-known-good) observation, the highest serial and its digest
-- seen (rollback refusal), and what the periodic worker needs after a restart.
CREATE TABLE registry_states (
    registration_uid     TEXT PRIMARY KEY,
    current_observation  TEXT NOT NULL DEFAULT '',
    highest_serial       BIGINT NOT NULL DEFAULT -1,
    highest_digest       TEXT NOT NULL DEFAULT '',
    last_attempt_at      BIGINT NOT NULL DEFAULT 0,
    last_success_at      BIGINT NOT NULL DEFAULT 0,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    lock_holder          TEXT NOT NULL DEFAULT '',
    lock_until           BIGINT NOT NULL DEFAULT 0
);

-- Durable, immutable refresh history: never updated, never deleted.
CREATE TABLE registry_refreshes (
    id               TEXT PRIMARY KEY,
    registration_uid TEXT NOT NULL,
    trigger_kind     TEXT NOT NULL,
    outcome          TEXT NOT NULL,
    started_at       BIGINT NOT NULL,
    finished_at      BIGINT NOT NULL,
    duration_ms      BIGINT NOT NULL,
    retry_count      INTEGER NOT NULL,
    correlation_id   TEXT NOT NULL,
    digest           TEXT NOT NULL DEFAULT '',
    observation_id   TEXT NOT NULL DEFAULT '',
    error_code       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX registry_refreshes_registration ON registry_refreshes (registration_uid, id);

-- Append-only: the first manifest digest seen for each publisher/Source/version, from any
-- registration. A different digest later is a blocking conflict.
CREATE TABLE registry_first_seen (
    publisher        TEXT NOT NULL,
    source           TEXT NOT NULL,
    version          TEXT NOT NULL,
    manifest_digest  TEXT NOT NULL,
    registration_uid TEXT NOT NULL,
    observation_id   TEXT NOT NULL,
    first_seen_at    BIGINT NOT NULL,
    PRIMARY KEY (publisher, source, version)
);

-- Imported Source versions: immutable, keeping the observation and the trust snapshot.
CREATE TABLE registry_imports (
    id               TEXT PRIMARY KEY,
    scope_ref        TEXT NOT NULL,
    registration_uid TEXT NOT NULL,
    observation_id   TEXT NOT NULL,
    catalog_name     TEXT NOT NULL,
    publisher        TEXT NOT NULL,
    source           TEXT NOT NULL,
    version          TEXT NOT NULL,
    manifest_digest  TEXT NOT NULL,
    manifest         BYTEA NOT NULL,
    trust_snapshot   BYTEA NOT NULL,
    imported_at      BIGINT NOT NULL,
    UNIQUE (scope_ref, registration_uid, observation_id, catalog_name, publisher, source, version)
);

-- +goose Down
DROP TABLE registry_imports;
DROP TABLE registry_first_seen;
DROP TABLE registry_refreshes;
DROP TABLE registry_states;
DROP TABLE registry_observation_shards;
DROP TABLE registry_observations;
