package packprojects

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
)

// ErrNotFound: no project of that id in the workspace.
var ErrNotFound = errors.New("pack project not found")

// MaxProjects bounds the projects a workspace keeps: each holds an archive of up to 8 MiB, and a
// careless or hostile client must not fill the store. Deleting one makes room.
const MaxProjects = 100

// ErrTooMany: the workspace already keeps MaxProjects projects.
var ErrTooMany = fmt.Errorf("the workspace already keeps %d Pack projects: delete one to make room", MaxProjects)

// MaxList bounds a list of projects.
const MaxList = 100

// Project is a stored Pack project.
type Project struct {
	ID        string
	Workspace string
	Publisher string
	Name      string
	Version   string
	Direct    []string
	Automatic []string
	Digest    platformv1.Digest
	FileName  string
	Size      int64
	CreatedAt time.Time
	Creator   string
	// Archive is set by Archive only: lists leave the bytes in the store.
	Archive []byte
}

// Store keeps the Pack projects in the SQL store.
type Store struct {
	DB *store.Store
	// Clock is the time source; time.Now when nil.
	Clock func() time.Time
}

// NewStore is the store of Pack projects on db.
func NewStore(db *store.Store) *Store { return &Store{DB: db} }

func (s *Store) now() time.Time {
	if s.Clock != nil {
		return s.Clock().UTC()
	}
	return time.Now().UTC()
}

func (s *Store) q(query string) string { return s.DB.Rebind(query) }

// Create stores p with a new id and the time of now; it answers the stored project.
func (s *Store) Create(ctx context.Context, p Project) (Project, error) {
	p.ID = uuid.NewString()
	p.CreatedAt = s.now().Truncate(time.Millisecond)
	p.Size = int64(len(p.Archive))
	direct, err := json.Marshal(p.Direct)
	if err != nil {
		return p, err
	}
	automatic, err := json.Marshal(p.Automatic)
	if err != nil {
		return p, err
	}
	err = s.DB.InTx(ctx, func(tx *sql.Tx) error {
		var kept int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM pack_projects WHERE workspace = ?`), p.Workspace).Scan(&kept); err != nil {
			return err
		}
		if kept >= MaxProjects {
			return ErrTooMany
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO pack_projects (id, workspace, publisher, name, version, direct_keys, automatic_keys,
			digest, file_name, archive, size, created_at, creator) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			p.ID, p.Workspace, p.Publisher, p.Name, p.Version, string(direct), string(automatic), string(p.Digest), p.FileName, p.Archive,
			p.Size, p.CreatedAt.UnixMilli(), p.Creator)
		return err
	})
	return p, err
}

const columns = `id, workspace, publisher, name, version, direct_keys, automatic_keys, digest, file_name, size, created_at, creator`

func scan(row interface{ Scan(...any) error }, extra ...any) (Project, error) {
	var p Project
	var direct, automatic, digest string
	var created int64
	err := row.Scan(append([]any{&p.ID, &p.Workspace, &p.Publisher, &p.Name, &p.Version, &direct, &automatic, &digest, &p.FileName,
		&p.Size, &created, &p.Creator}, extra...)...)
	if err != nil {
		return p, err
	}
	p.Digest, p.CreatedAt = platformv1.Digest(digest), time.UnixMilli(created).UTC()
	if err := json.Unmarshal([]byte(direct), &p.Direct); err != nil {
		return p, err
	}
	return p, json.Unmarshal([]byte(automatic), &p.Automatic)
}

// List answers the workspace's projects, newest first, at most limit (MaxList) of them.
func (s *Store) List(ctx context.Context, workspace string, limit int) ([]Project, error) {
	if limit <= 0 || limit > MaxList {
		limit = MaxList
	}
	rows, err := s.DB.DB().QueryContext(ctx, s.q(`SELECT `+columns+` FROM pack_projects WHERE workspace = ?
		ORDER BY created_at DESC, id DESC LIMIT ?`), workspace, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Project{}
	for rows.Next() {
		p, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// Get answers the project id of the workspace, with its archive; ErrNotFound when the workspace
// has none of that id.
func (s *Store) Get(ctx context.Context, workspace, id string) (Project, error) {
	var archive []byte
	p, err := scan(s.DB.DB().QueryRowContext(ctx, s.q(`SELECT `+columns+`, archive FROM pack_projects WHERE workspace = ? AND id = ?`),
		workspace, id), &archive)
	if errors.Is(err, sql.ErrNoRows) {
		return p, ErrNotFound
	}
	p.Archive = archive
	return p, err
}

// Delete removes the project id of the workspace with its archive; ErrNotFound when the
// workspace has none of that id.
func (s *Store) Delete(ctx context.Context, workspace, id string) error {
	res, err := s.DB.DB().ExecContext(ctx, s.q(`DELETE FROM pack_projects WHERE workspace = ? AND id = ?`), workspace, id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return ErrNotFound
	}
	return nil
}
