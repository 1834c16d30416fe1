-- +goose Up
-- Pack projects of the Composer: each row is an immutable snapshot of a selection of a workspace's
-- default-namespace resources, generated as a validated Pack archive. workspace is the
-- workspace's route name (its kube namespace); direct_keys and automatic_keys are JSON lists of
-- the <Kind>/<name> keys the archive holds, as selected and as brought in by the closure;
-- created_at is Unix milliseconds (UTC); creator is the Principal that created it. The archive is
-- kept with its project (at most 8 MiB, the Pack limit) so the download answers exactly the bytes
-- whose digest the project shows.
CREATE TABLE pack_projects (
    id             TEXT PRIMARY KEY,
    workspace      TEXT NOT NULL,
    publisher      TEXT NOT NULL,
    name           TEXT NOT NULL,
    version        TEXT NOT NULL,
    direct_keys    TEXT NOT NULL,
    automatic_keys TEXT NOT NULL,
    digest         TEXT NOT NULL,
    file_name      TEXT NOT NULL,
    archive        BLOB NOT NULL,
    size           INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    creator        TEXT NOT NULL
);
CREATE INDEX pack_projects_newest ON pack_projects (workspace, created_at);

-- +goose Down
DROP TABLE pack_projects;
