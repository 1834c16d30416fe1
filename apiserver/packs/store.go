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
// (the same bytes), and returns the digest. Either way the archive's created_at becomes now: it
// is when the archive was last stored, which keeps it from the collector (CollectArchives) while
// the request that stored it goes on to name it.
func (s *Store) PutArchive(ctx context.Context, content []byte) (platformv1.Digest, error) {
	digest := DigestOf(content)
	_, err := s.DB.DB().ExecContext(ctx, s.DB.Rebind(`INSERT INTO pack_archives (digest, content, size, created_at)
		VALUES (?, ?, ?, ?) ON CONFLICT (digest) DO UPDATE SET created_at = excluded.created_at`), string(digest), content, len(content), s.now())
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

// CollectArchives is one bounded pass of the archive collector: it looks at up to scan archives
// whose digest sorts after `after` and that were last stored before storedBefore, and removes
// those inUse does not claim. It returns the removed digests and where the next pass goes on
// ("" once it went round: the next pass starts over).
func (s *Store) CollectArchives(ctx context.Context, after platformv1.Digest, storedBefore time.Time, scan int,
	inUse func(platformv1.Digest) bool) (removed []platformv1.Digest, next platformv1.Digest, err error) {
	rows, err := s.DB.DB().QueryContext(ctx, s.DB.Rebind(`SELECT digest FROM pack_archives WHERE digest > ? AND created_at < ?
		ORDER BY digest LIMIT ?`), string(after), storedBefore.UnixMilli(), scan)
	if err != nil {
		return nil, "", fmt.Errorf("listing pack archives: %w", err)
	}
	var candidates []platformv1.Digest
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			rows.Close()
			return nil, "", err
		}
		candidates = append(candidates, platformv1.Digest(d))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	if len(candidates) == scan {
		next = candidates[len(candidates)-1]
	}
	for _, d := range candidates {
		if inUse(d) {
			continue
		}
		// Stored again since it was listed (an install under way): it stays.
		res, err := s.DB.DB().ExecContext(ctx, s.DB.Rebind(`DELETE FROM pack_archives WHERE digest = ? AND created_at < ?`),
			string(d), storedBefore.UnixMilli())
		if err != nil {
			return removed, next, fmt.Errorf("removing pack archive %s: %w", d, err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			removed = append(removed, d)
		}
	}
	return removed, next, nil
}
