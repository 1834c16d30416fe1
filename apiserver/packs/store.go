// Package packs keeps what the Pack installer needs outside etcd: archives stored once by their
// sha256 digest (what an InstalledPack names, and what rollback goes back to) and the binding
// selections of a workspace's Packs, by the Pack's stable publisher/name identity so that they
// survive uninstall and reinstall.
package packs

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
)

// ErrNotFound: no archive of that digest is stored.
var ErrNotFound = errors.New("pack archive not found")

// maxBindings bounds the selections read for one Pack (a manifest declares at most as many).
const maxBindings = 64

// Store is the SQL side of Packs.
type Store struct {
	DB *store.Store
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (s *Store) now() int64 {
	if s.Now != nil {
		return s.Now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// DigestOf is the digest under which content is stored: `sha256:<hex>`.
func DigestOf(content []byte) platformv1.Digest {
	sum := sha256.Sum256(content)
	return platformv1.Digest("sha256:" + hex.EncodeToString(sum[:]))
}

// PutArchive stores content under its digest unless an archive of that digest is stored already
// (the same bytes), and returns the digest.
func (s *Store) PutArchive(ctx context.Context, content []byte) (platformv1.Digest, error) {
	digest := DigestOf(content)
	_, err := s.DB.DB().ExecContext(ctx, s.DB.Rebind(`INSERT INTO pack_archives (digest, content, size, created_at)
		VALUES (?, ?, ?, ?) ON CONFLICT (digest) DO NOTHING`), string(digest), content, len(content), s.now())
	if err != nil {
		return "", fmt.Errorf("storing pack archive %s: %w", digest, err)
	}
	return digest, nil
}

// Archive is the stored archive of digest; ErrNotFound when there is none.
func (s *Store) Archive(ctx context.Context, digest platformv1.Digest) ([]byte, error) {
	var content []byte
	err := s.DB.DB().QueryRowContext(ctx, s.DB.Rebind(`SELECT content FROM pack_archives WHERE digest = ?`), string(digest)).Scan(&content)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, digest)
	}
	if err != nil {
		return nil, fmt.Errorf("reading pack archive %s: %w", digest, err)
	}
	return content, nil
}

// Identity is a Pack of a workspace by its stable identity.
type Identity struct {
	Workspace string
	Publisher string
	Name      string
}

// Selection is a stored binding selection.
type Selection struct {
	Binding    string
	TargetKind string
	Namespace  string
	Name       string
}

// SetBindings stores the selections of id, replacing those of the same bindings; the others
// stay.
func (s *Store) SetBindings(ctx context.Context, id Identity, sel []Selection) error {
	return s.DB.InTx(ctx, func(tx *sql.Tx) error {
		for _, b := range sel {
			if _, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO pack_binding_selections
				(workspace, publisher, pack, binding, target_kind, namespace, name, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (workspace, publisher, pack, binding) DO UPDATE SET target_kind = excluded.target_kind,
				namespace = excluded.namespace, name = excluded.name, updated_at = excluded.updated_at`),
				id.Workspace, id.Publisher, id.Name, b.Binding, b.TargetKind, b.Namespace, b.Name, s.now()); err != nil {
				return fmt.Errorf("storing binding %s of %s.%s: %w", b.Binding, id.Publisher, id.Name, err)
			}
		}
		return nil
	})
}

// Bindings are the stored selections of id, by binding name.
func (s *Store) Bindings(ctx context.Context, id Identity) ([]Selection, error) {
	rows, err := s.DB.DB().QueryContext(ctx, s.DB.Rebind(`SELECT binding, target_kind, namespace, name FROM pack_binding_selections
		WHERE workspace = ? AND publisher = ? AND pack = ? ORDER BY binding LIMIT ?`), id.Workspace, id.Publisher, id.Name, maxBindings)
	if err != nil {
		return nil, fmt.Errorf("reading bindings of %s.%s: %w", id.Publisher, id.Name, err)
	}
	defer rows.Close()
	var out []Selection
	for rows.Next() {
		var b Selection
		if err := rows.Scan(&b.Binding, &b.TargetKind, &b.Namespace, &b.Name); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
