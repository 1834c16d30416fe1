-- +goose Up
-- Packs: archives stored once by their digest, and the binding selections of a workspace.
--
-- An archive is immutable: its primary key is the sha256 digest of its bytes, so storing it twice
-- stores it once (put-if-absent). An InstalledPack names the archive it wants by digest; its
-- retained version's archive stays here for rollback. Times are Unix milliseconds (UTC).
CREATE TABLE pack_archives (
    digest     TEXT PRIMARY KEY,
    content    BYTEA NOT NULL,
    size       BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);

-- The selection that satisfies one declared binding of a Pack, by the Pack's stable identity
-- (publisher, name) in a workspace: it survives uninstall and reinstall. A Secret binding stores
-- only the Secret's namespace and name.
CREATE TABLE pack_binding_selections (
    workspace   TEXT NOT NULL,
    publisher   TEXT NOT NULL,
    pack        TEXT NOT NULL,
    binding     TEXT NOT NULL,
    target_kind TEXT NOT NULL DEFAULT '',
    namespace   TEXT NOT NULL,
    name        TEXT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (workspace, publisher, pack, binding)
);

-- +goose Down
DROP TABLE pack_binding_selections;
DROP TABLE pack_archives;
