-- +goose Up
-- Local Vault payloads: one row per Vault entry, apart from the Secret and Vault metadata (which
-- live in the kube API). An entry is named by the Vault's scope and name and, inside it, by the
-- Secret's scope and vault key, so same-named Secrets of different scopes never share a payload.
-- The value is sealed with AES-256-GCM under the master key (which is never stored) with a
-- fresh random nonce per write; the associated data binds it to the entry's four names, so a row
-- moved to another entry fails to open. key_id tells which master key sealed it (a MAC of a fixed
-- label under the key, which reveals nothing about the key): a replaced key is detected without
-- trying to decrypt.
CREATE TABLE local_vault_entries (
    vault_scope  TEXT NOT NULL,
    vault_name   TEXT NOT NULL,
    secret_scope TEXT NOT NULL,
    entry_key    TEXT NOT NULL,
    format       TEXT NOT NULL,
    key_id       TEXT NOT NULL,
    nonce        BLOB NOT NULL,
    ciphertext   BLOB NOT NULL,
    tag          BLOB NOT NULL,
    updated_at   DATETIME NOT NULL,
    PRIMARY KEY (vault_scope, vault_name, secret_scope, entry_key)
);

-- +goose Down
DROP TABLE local_vault_entries;
