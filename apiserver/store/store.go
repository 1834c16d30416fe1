package store

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib" // also registers the "pgx" database/sql driver, which tests use
	"github.com/ncruces/go-sqlite3"
	sqlitedriver "github.com/ncruces/go-sqlite3/driver" // its SQLite build comes with it
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Dialects that Store.Dialect returns.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// FileName is the SQLite file that Open uses in the data directory.
const FileName = "platform.db"

// busyTimeout is how long a SQLite connection waits for a lock before it reports busy.
const busyTimeout = 10 * time.Second

// Connection pool bounds.
const (
	maxIdleConns     = 32
	maxPostgresConns = 24
)

// connectTimeout bounds the first contact with PostgreSQL so that an unreachable server fails
// start-up instead of hanging it.
const connectTimeout = 15 * time.Second

//go:embed migrations
var migrations embed.FS

// Options say where the store lives.
type Options struct {
	// DataDir holds the SQLite file (platform.db) when DatabaseURL is empty.
	DataDir string
	// DatabaseURL, when it starts with postgres:// or postgresql://, selects PostgreSQL.
	DatabaseURL string
}

// Store is the SQL database of the platform with its schema applied.
type Store struct {
	db      *sql.DB
	dialect string
	// group queues the transactions of GroupInTx for their shared commit.
	group group
	// rebound remembers the PostgreSQL form of the queries Rebind saw, up to maxRebound of them:
	// the same few queries are rebound at every call of the serving path.
	rebound  sync.Map
	reboundN atomic.Int64
	// counter counts what the store runs (Counts), shared with its connections.
	counter *counter
}

// maxRebound bounds Rebind's memory: queries built with a varying number of placeholders are
// many, the queries of the code few.
const maxRebound = 4096

// Instance is the identity of this platform installation, created at first start.
type Instance struct {
	ID        string
	CreatedAt time.Time
}

// Open connects to the database that opts name, applies the migrations the database lacks and
// records the instance row at first start. Errors are one line and never contain the password of
// the database URL.
func Open(ctx context.Context, opts Options) (*Store, error) {
	var (
		s   *Store
		err error
	)
	switch {
	case opts.DatabaseURL == "":
		s, err = openSQLite(ctx, opts.DataDir)
	case strings.HasPrefix(opts.DatabaseURL, "postgres://"), strings.HasPrefix(opts.DatabaseURL, "postgresql://"):
		s, err = openPostgres(ctx, opts.DatabaseURL)
	default:
		return nil, fmt.Errorf("database URL %s: only postgres:// or postgresql:// URLs are supported (leave it empty for SQLite in the data directory)", redact(opts.DatabaseURL))
	}
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	if err := s.ensureInstance(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

func openSQLite(ctx context.Context, dataDir string) (*Store, error) {
	if dataDir == "" {
		return nil, errors.New("store: a data directory or a database URL is required")
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	path, err := filepath.Abs(filepath.Join(dataDir, FileName))
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	connector, err := (&sqlitedriver.SQLite{}).OpenConnector(sqliteDSN(path))
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	counts := &counter{}
	db := sql.OpenDB(statementCache{Connector: connector, counter: counts})
	// A connection is costly to open (a SQLite instance and its pragmas): keep the ones that
	// concurrent requests opened instead of the pool's default two.
	db.SetMaxIdleConns(maxIdleConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	return &Store{db: db, dialect: SQLite, counter: counts}, nil
}

// sqliteDSN names the file with the settings every pooled connection gets: the driver runs the
// _pragma parameters, in order, on each connection it opens (busy_timeout first, as it asks).
func sqliteDSN(path string) string {
	q := url.Values{}
	q.Set("_txlock", "immediate")
	q["_pragma"] = []string{
		fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()),
		"journal_mode(wal)",
		"synchronous(full)",
		"foreign_keys(on)",
	}
	return (&url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}).String()
}

func openPostgres(ctx context.Context, rawURL string) (*Store, error) {
	shown := redact(rawURL)
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error repeats the whole URL, password included; its cause does not.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("database URL %s is invalid: %v", shown, err)
	}
	password, _ := u.User.Password()
	hide := func(err error) error {
		msg := err.Error()
		if password != "" {
			msg = strings.ReplaceAll(msg, password, "xxxxx")
		}
		return errors.New(strings.Join(strings.Fields(msg), " "))
	}
	config, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("database %s is invalid: %v", shown, hide(err))
	}
	counts := &counter{}
	config.Tracer = counts
	db := sql.OpenDB(pipelining{stdlib.GetConnector(*config)})
	// A PostgreSQL connection is a server process: the pool keeps what it opened (instead of the
	// default two idle, which under load opens and closes one per query) and stays well under
	// the server's default max_connections of 100.
	db.SetMaxOpenConns(maxPostgresConns)
	db.SetMaxIdleConns(maxPostgresConns)
	pingCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("database %s: cannot connect: %v", shown, hide(err))
	}
	return &Store{db: db, dialect: Postgres, counter: counts}, nil
}

// redact returns the URL with its password replaced, or a placeholder when it does not parse.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if scheme, _, ok := strings.Cut(rawURL, "://"); ok {
			return scheme + "://(unparsable)"
		}
		return "(unparsable)"
	}
	return u.Redacted()
}

// migrate applies the embedded migrations of the dialect that the database lacks, after making
// sure the database is not ahead of this binary.
func (s *Store) migrate(ctx context.Context) error {
	fsys, err := fs.Sub(migrations, "migrations/"+s.dialect)
	if err != nil {
		return err
	}
	var gooseOpts []goose.ProviderOption
	dialect := goose.DialectSQLite3
	if s.dialect == Postgres {
		dialect = goose.DialectPostgres
		// Replicas starting together take turns: an advisory lock held for the migration.
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return err
		}
		gooseOpts = append(gooseOpts, goose.WithSessionLocker(locker))
	}
	provider, err := goose.NewProvider(dialect, s.db, fsys, gooseOpts...)
	if err != nil {
		return fmt.Errorf("store migrations: %w", err)
	}
	if err := s.refuseNewerSchema(ctx, provider); err != nil {
		return err
	}
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("store migrations: %w", err)
	}
	return nil
}

func (s *Store) refuseNewerSchema(ctx context.Context, provider *goose.Provider) error {
	var newest int64
	for _, src := range provider.ListSources() {
		newest = max(newest, src.Version)
	}
	applied, err := provider.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("store migrations: %w", err)
	}
	if applied > newest {
		return fmt.Errorf("store: the database schema is at version %d, newer than this binary knows (%d); run a platform release at least as new as the one that last migrated it", applied, newest)
	}
	return nil
}

func (s *Store) ensureInstance(ctx context.Context) error {
	id := make([]byte, 16)
	if _, err := crand.Read(id); err != nil {
		return err
	}
	return s.InTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.Rebind(
			`INSERT INTO instance (singleton, instance_id, created_at) VALUES (1, ?, ?) ON CONFLICT (singleton) DO NOTHING`),
			hex.EncodeToString(id), time.Now().UTC())
		if err != nil {
			return fmt.Errorf("store: record the instance: %w", err)
		}
		return nil
	})
}

// Instance returns the identity of this installation.
func (s *Store) Instance(ctx context.Context) (Instance, error) {
	var in Instance
	err := s.db.QueryRowContext(ctx, `SELECT instance_id, created_at FROM instance WHERE singleton = 1`).Scan(&in.ID, &in.CreatedAt)
	return in, err
}

// DB is the connection pool.
func (s *Store) DB() *sql.DB { return s.db }

// Dialect is SQLite or Postgres.
func (s *Store) Dialect() string { return s.dialect }

// Close closes the connection pool.
func (s *Store) Close() error { return s.db.Close() }

// Rebind turns the `?` placeholders of query into the dialect's: unchanged for SQLite, $1, $2, ...
// for PostgreSQL. Question marks inside string literals, quoted identifiers and comments are left
// alone; PostgreSQL's `?` operators cannot be written in queries passed through Rebind.
func (s *Store) Rebind(query string) string {
	if s.dialect != Postgres {
		return query
	}
	if rebound, ok := s.rebound.Load(query); ok {
		return rebound.(string)
	}
	rebound := rebindDollar(query)
	if s.reboundN.Add(1) <= maxRebound {
		s.rebound.Store(query, rebound)
	}
	return rebound
}

func rebindDollar(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			end := strings.IndexByte(query[i+1:], c)
			if end < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+end+2])
			i += end + 1
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			end := strings.IndexByte(query[i:], '\n')
			if end < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+end+1])
			i += end
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// maxTxAttempts bounds how often InTx runs a transaction that keeps losing races.
const maxTxAttempts = 10

// InTx runs fn in a transaction and commits it, or rolls it back when fn or the commit fails.
// A transaction that failed because it lost a race (SQLite busy or locked, PostgreSQL
// serialization failure or deadlock) is run again, up to maxTxAttempts times with a growing
// pause, so fn must not have effects outside the transaction.
func (s *Store) InTx(ctx context.Context, fn func(*sql.Tx) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = s.inTxOnce(ctx, fn)
		if err == nil || !s.retryable(err) || attempt == maxTxAttempts {
			return err
		}
		// SQLite writers already queue on the busy timeout and PostgreSQL losers are rare, so the
		// pause is short, growing and jittered so that the losers do not collide again.
		pause := time.Duration(attempt)*2*time.Millisecond + rand.N(2*time.Millisecond)
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(pause):
		}
	}
}

func (s *Store) inTxOnce(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	s.counter.transactions.Add(1)
	if err := fn(tx); err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.counter.commits.Add(1)
	return nil
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// retryable reports whether err says the transaction lost a race and may succeed when run again.
func (s *Store) retryable(err error) bool {
	if errors.Is(err, sqlite3.BUSY) || errors.Is(err, sqlite3.LOCKED) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "40001" || pgErr.Code == "40P01"
	}
	return false
}
