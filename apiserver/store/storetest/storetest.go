// Package storetest runs store tests on every dialect: SQLite in a temporary directory and
// PostgreSQL on a throwaway server started from Debian's binaries (package postgresql), one
// server per test package, a fresh database per test.
//
// A package that uses it calls Main (or Run) from its TestMain so that the server stops at the
// end:
//
//	func TestMain(m *testing.M) { storetest.Main(m) }
package storetest

import (
	"bytes"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"platform.dev/platform/apiserver/store"
)

var (
	mainCalled bool

	pgOnce   sync.Once
	pgServer *postgresServer
	pgSkip   string // why PostgreSQL subtests skip, when they do
	pgErr    error  // why the server could not start, when pg_ctl is present

	dbCounter atomic.Int64
)

// Main runs the tests of the package and stops the PostgreSQL server they started.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain that has more to stop after the tests: it returns the exit code
// instead of exiting.
func Run(m *testing.M) int {
	mainCalled = true
	code := m.Run()
	if pgServer != nil {
		if err := pgServer.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "storetest: stop PostgreSQL: %v\n", err)
		}
	}
	return code
}

// ForEachDialect runs body as the subtests "sqlite" and "postgres", each on a fresh, migrated
// store that is closed when the subtest ends.
func ForEachDialect(t *testing.T, body func(t *testing.T, s *store.Store)) {
	t.Helper()
	ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		s, err := store.Open(context.Background(), opts)
		if err != nil {
			t.Fatalf("open store: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		body(t, s)
	})
}

// ForEachDialectOptions runs body as the subtests "sqlite" and "postgres" with the options of a
// fresh, empty database, for tests that open (and reopen) the store themselves.
func ForEachDialectOptions(t *testing.T, body func(t *testing.T, opts store.Options)) {
	t.Helper()
	t.Run(store.SQLite, func(t *testing.T) {
		body(t, store.Options{DataDir: t.TempDir()})
	})
	t.Run(store.Postgres, func(t *testing.T) {
		body(t, store.Options{DatabaseURL: freshPostgresDatabase(t)})
	})
}

// ForEachDialectBench runs body as the sub-benchmarks "sqlite" and "postgres", each on a fresh,
// migrated store that is closed when the sub-benchmark ends.
func ForEachDialectBench(b *testing.B, body func(b *testing.B, s *store.Store)) {
	b.Helper()
	run := func(b *testing.B, opts store.Options) {
		s, err := store.Open(context.Background(), opts)
		if err != nil {
			b.Fatalf("open store: %v", err)
		}
		b.Cleanup(func() { s.Close() })
		body(b, s)
	}
	b.Run(store.SQLite, func(b *testing.B) { run(b, store.Options{DataDir: b.TempDir()}) })
	b.Run(store.Postgres, func(b *testing.B) { run(b, store.Options{DatabaseURL: freshPostgresDatabase(b)}) })
}

// freshPostgresDatabase creates an empty database on the package's server and returns its URL.
func freshPostgresDatabase(t testing.TB) string {
	t.Helper()
	if !mainCalled {
		t.Fatal("storetest: call storetest.Main(m) from the package's TestMain so the PostgreSQL server is stopped")
	}
	pgOnce.Do(startPostgres)
	if pgSkip != "" {
		t.Skip(pgSkip)
	}
	if pgErr != nil {
		t.Fatalf("storetest: PostgreSQL: %v", pgErr)
	}
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), dbCounter.Add(1))
	db, err := sql.Open("pgx", pgServer.url("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("storetest: create database: %v", err)
	}
	return pgServer.url(name)
}

// postgresServer is a PostgreSQL cluster in a temporary directory, listening on loopback.
type postgresServer struct {
	bin  string   // directory of pg_ctl, initdb and postgres
	dir  string   // temporary directory: data/, the socket and the log
	port int      // TCP port on 127.0.0.1
	as   []string // command prefix that runs a program as the postgres user, when we are root
}

func (p *postgresServer) url(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.port, database)
}

// findPgBin returns the directory of pg_ctl: on PATH or under /usr/lib/postgresql/*/bin (the
// newest), where Debian's postgresql package installs it.
func findPgBin() string {
	if path, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
		return filepath.Dir(path)
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	sort.Slice(matches, func(i, j int) bool { return pgVersion(matches[i]) < pgVersion(matches[j]) })
	if len(matches) == 0 {
		return ""
	}
	return filepath.Dir(matches[len(matches)-1])
}

func pgVersion(pgCtl string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(pgCtl))))
	return v
}

func startPostgres() {
	pgServer, pgSkip, pgErr = newPostgresServer()
}

// newPostgresServer initializes and starts a PostgreSQL cluster in a temporary directory; skip
// says why it cannot when the binaries or the postgres user are absent.
func newPostgresServer() (_ *postgresServer, skip string, _ error) {
	bin := findPgBin()
	if bin == "" {
		return nil, "PostgreSQL tests skipped: pg_ctl is not on PATH nor under /usr/lib/postgresql/*/bin (install the Debian package postgresql)", nil
	}
	srv := &postgresServer{bin: bin}
	dir, err := os.MkdirTemp("", "storetest-pg-")
	if err != nil {
		return nil, "", err
	}
	srv.dir = dir
	started := false
	defer func() {
		if !started { // failed or skipped: leave nothing behind
			if _, err := os.Stat(filepath.Join(dir, "data", "postmaster.pid")); err == nil {
				srv.stop()
			}
			os.RemoveAll(dir)
		}
	}()
	// initdb and postgres refuse to run as root: run them as the postgres system user, which
	// Debian's package creates, in a directory it owns.
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, "PostgreSQL tests skipped: running as root and there is no postgres user to run the server as (install the Debian package postgresql)", nil
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, "", err
		}
		runuser, err := exec.LookPath("runuser")
		if err != nil {
			return nil, "", fmt.Errorf("running as root needs runuser to start PostgreSQL as the postgres user: %w", err)
		}
		srv.as = []string{runuser, "-u", "postgres", "--"}
		if err := srv.run("/usr/bin/test", "-w", dir); err != nil {
			return nil, "", fmt.Errorf("the postgres user cannot write %s (is a parent directory private? set TMPDIR to a directory others can traverse): %w", dir, err)
		}
	}
	srv.port, err = freePort()
	if err != nil {
		return nil, "", err
	}
	if err := srv.run("initdb", "-D", filepath.Join(dir, "data"), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"); err != nil {
		return nil, "", err
	}
	if err := srv.start(); err != nil {
		return nil, "", err
	}
	started = true
	return srv, "", nil
}

// start starts the initialized server (again) on its port.
func (p *postgresServer) start() error {
	serverOpts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c max_connections=200", p.port, p.dir)
	if !benchmarking() {
		// Tests need no durability against a power cut and run faster without fsync; benchmarks
		// measure the server as Debian ships it (fsync and full_page_writes on), as SQLite's
		// side runs with synchronous=FULL, so that their rates describe a store users run.
		serverOpts += " -c fsync=off -c full_page_writes=off"
	}
	if err := p.run("pg_ctl", "-D", filepath.Join(p.dir, "data"), "-l", filepath.Join(p.dir, "server.log"), "-o", serverOpts, "-t", "60", "-w", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "server.log"))
		return fmt.Errorf("%w; server log:\n%s", err, log)
	}
	return nil
}

// halt stops the server and keeps its data, to be started again.
func (p *postgresServer) halt() error {
	return p.run("pg_ctl", "-D", filepath.Join(p.dir, "data"), "-m", "fast", "-w", "stop")
}

// Postgres is a private PostgreSQL server of one test, which the test may stop and start again
// (a database restarted under load); it stops and is removed when the test ends.
type Postgres struct{ srv *postgresServer }

// StartPostgres starts a private PostgreSQL server for t, or skips t with the reason when the
// binaries are absent.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	srv, skip, err := newPostgresServer()
	if skip != "" {
		t.Skip(skip)
	}
	if err != nil {
		t.Fatalf("storetest: PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.stop(); err != nil {
			t.Logf("storetest: stop PostgreSQL: %v", err)
		}
	})
	return &Postgres{srv: srv}
}

// Database creates an empty database and returns its URL.
func (p *Postgres) Database(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), dbCounter.Add(1))
	db, err := sql.Open("pgx", p.srv.url("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("storetest: create database: %v", err)
	}
	return p.srv.url(name)
}

// Stop stops the server (fast shutdown: sessions are ended), keeping its data.
func (p *Postgres) Stop() error { return p.srv.halt() }

// Start starts the stopped server again on the same port.
func (p *Postgres) Start() error { return p.srv.start() }

// benchmarking reports whether the test binary was asked to run benchmarks (-test.bench).
func benchmarking() bool {
	f := flag.Lookup("test.bench")
	return f != nil && f.Value.String() != ""
}

func (p *postgresServer) stop() error {
	defer os.RemoveAll(p.dir)
	if _, err := os.Stat(filepath.Join(p.dir, "data", "postmaster.pid")); err != nil {
		return nil // stopped already
	}
	return p.halt()
}

// run runs one of the PostgreSQL programs, as the postgres user when we are root.
func (p *postgresServer) run(program string, args ...string) error {
	if !filepath.IsAbs(program) {
		program = filepath.Join(p.bin, program)
	}
	argv := append(append([]string{}, p.as...), program)
	argv = append(argv, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = p.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(program), err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// BenchRawCommits is the ceiling the Work benchmarks are measured against: one single-row INSERT
// committed per operation on s (on SQLite, WAL with synchronous=FULL: one fsync per commit),
// reported as commits/s. Benchmarks of whole paths measure it on their own store, in the same
// run (RawCommitsPerSecond).
func BenchRawCommits(b *testing.B, s *store.Store) {
	commit := rawCommitter(b, s)
	b.ResetTimer()
	for i := range b.N {
		commit(i)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

// RawCommitsPerSecond is BenchRawCommits's rate on s measured for about window, for a benchmark
// of a whole path to report its ratio to the ceiling of the same store in the same run.
func RawCommitsPerSecond(b *testing.B, s *store.Store, window time.Duration) float64 {
	commit := rawCommitter(b, s)
	began := time.Now()
	n := 0
	for ; time.Since(began) < window; n++ {
		commit(n)
	}
	return float64(n) / time.Since(began).Seconds()
}

// rawCommitter creates a table of its own on s and returns what commits its row i alone.
func rawCommitter(b *testing.B, s *store.Store) func(i int) {
	ctx := context.Background()
	table := fmt.Sprintf("bench_commits_%d", time.Now().UnixNano())
	if _, err := s.DB().ExecContext(ctx, `CREATE TABLE `+table+` (id BIGINT PRIMARY KEY)`); err != nil {
		b.Fatal(err)
	}
	insert := s.Rebind(`INSERT INTO ` + table + ` (id) VALUES (?)`)
	return func(i int) {
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, insert, i)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// RowsText is every row of tables, as text: a test looks in it for a value that must never be
// stored (a token, a password).
func RowsText(t testing.TB, db *store.Store, tables ...string) string {
	t.Helper()
	var all strings.Builder
	for _, table := range tables {
		rows, err := db.DB().Query("SELECT * FROM " + table)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			values := make([]sql.RawBytes, len(cols))
			ptrs := make([]any, len(cols))
			for i := range values {
				ptrs[i] = &values[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range values {
				all.Write(v)
				all.WriteByte(' ')
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return all.String()
}
