package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/ncruces/go-sqlite3"
	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func appliedVersions(t *testing.T, s *store.Store) []int64 {
	t.Helper()
	rows, err := s.DB().Query(`SELECT version_id FROM goose_db_version WHERE version_id > 0 ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var versions []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return versions
}

func TestMigrationsAreAppliedAtOpenAndOnlyOnce(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		ctx := context.Background()
		s, err := store.Open(ctx, opts)
		g.Expect(err).NotTo(HaveOccurred())
		first := appliedVersions(t, s)
		g.Expect(first).To(ContainElement(int64(1)))
		g.Expect(s.Close()).To(Succeed())

		s, err = store.Open(ctx, opts)
		g.Expect(err).NotTo(HaveOccurred())
		defer s.Close()
		g.Expect(appliedVersions(t, s)).To(Equal(first), "reopening applies nothing twice")
	})
}

func TestTheInstanceRowIsCreatedOnceAndSurvivesReopen(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		ctx := context.Background()
		s, err := store.Open(ctx, opts)
		g.Expect(err).NotTo(HaveOccurred())
		first, err := s.Instance(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(first.ID).To(HaveLen(32))
		g.Expect(first.CreatedAt.IsZero()).To(BeFalse())
		g.Expect(s.Close()).To(Succeed())

		s, err = store.Open(ctx, opts)
		g.Expect(err).NotTo(HaveOccurred())
		defer s.Close()
		again, err := s.Instance(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again.ID).To(Equal(first.ID))
		g.Expect(again.CreatedAt.Equal(first.CreatedAt)).To(BeTrue(), "created_at %v then %v", first.CreatedAt, again.CreatedAt)
		var rows int
		g.Expect(s.DB().QueryRow(`SELECT COUNT(*) FROM instance`).Scan(&rows)).To(Succeed())
		g.Expect(rows).To(Equal(1))
	})
}

func TestRebindUsesTheDialectsPlaceholders(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		q := `SELECT ? AS a, '?' AS "b?", ? -- why?
FROM instance WHERE instance_id = ?`
		switch s.Dialect() {
		case store.SQLite:
			g.Expect(s.Rebind(q)).To(Equal(q))
		case store.Postgres:
			g.Expect(s.Rebind(q)).To(Equal(`SELECT $1 AS a, '?' AS "b?", $2 -- why?
FROM instance WHERE instance_id = $3`))
		default:
			t.Fatalf("unknown dialect %q", s.Dialect())
		}
		var n int
		g.Expect(s.DB().QueryRow(s.Rebind(`SELECT COUNT(*) FROM instance WHERE singleton = ? AND instance_id <> ?`), 1, "none").Scan(&n)).To(Succeed())
		g.Expect(n).To(Equal(1))
	})
}

func createProbe(t *testing.T, s *store.Store) {
	t.Helper()
	if _, err := s.DB().Exec(`CREATE TABLE probe (id BIGINT PRIMARY KEY, worker INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
}

func countProbe(t *testing.T, s *store.Store) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM probe`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestInTxCommitsWhenTheFunctionSucceeds(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		createProbe(t, s)
		g.Expect(s.InTx(ctx, func(tx *sql.Tx) error {
			for i := range 3 {
				if _, err := tx.ExecContext(ctx, s.Rebind(`INSERT INTO probe (id, worker) VALUES (?, ?)`), i, 0); err != nil {
					return err
				}
			}
			return nil
		})).To(Succeed())
		g.Expect(countProbe(t, s)).To(Equal(3))
	})
}

func TestInTxAppliesNothingWhenTheFunctionFails(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		createProbe(t, s)
		boom := errors.New("boom")
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, s.Rebind(`INSERT INTO probe (id, worker) VALUES (?, ?)`), 1, 0); err != nil {
				return err
			}
			return boom
		})
		g.Expect(err).To(MatchError(boom))
		g.Expect(countProbe(t, s)).To(Equal(0))

		// A failing statement in the middle leaves nothing either.
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, s.Rebind(`INSERT INTO probe (id, worker) VALUES (?, ?)`), 2, 0); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, s.Rebind(`INSERT INTO probe (id, worker) VALUES (?, ?)`), 2, 0)
			return err
		})
		g.Expect(err).To(HaveOccurred())
		g.Expect(countProbe(t, s)).To(Equal(0))
	})
}

func TestConcurrentWritersAllSucceed(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		createProbe(t, s)
		const workers, inserts = 8, 20
		var wg sync.WaitGroup
		errs := make(chan error, workers*inserts)
		for w := range workers {
			wg.Go(func() {
				for i := range inserts {
					errs <- s.InTx(ctx, func(tx *sql.Tx) error {
						// Read then write, the pattern that deadlocks deferred SQLite transactions.
						var n int
						if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM probe`).Scan(&n); err != nil {
							return err
						}
						_, err := tx.ExecContext(ctx, s.Rebind(`INSERT INTO probe (id, worker) VALUES (?, ?)`), w*inserts+i, w)
						return err
					})
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			g.Expect(err).NotTo(HaveOccurred())
		}
		g.Expect(countProbe(t, s)).To(Equal(workers * inserts))
	})
}

func TestSQLiteIsDurableWALWithForeignKeys(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		if s.Dialect() != store.SQLite {
			t.Skip("SQLite pragmas")
		}
		g := NewWithT(t)
		ctx := context.Background()
		// Hold several connections at once so that the check covers more than the first one.
		var conns []*sql.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for range 3 {
			c, err := s.DB().Conn(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			conns = append(conns, c)
			var mode string
			var sync, fk, timeout int
			g.Expect(c.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode)).To(Succeed())
			g.Expect(c.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync)).To(Succeed())
			g.Expect(c.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk)).To(Succeed())
			g.Expect(c.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&timeout)).To(Succeed())
			g.Expect(mode).To(Equal("wal"))
			g.Expect(sync).To(Equal(2), "synchronous=FULL")
			g.Expect(fk).To(Equal(1))
			g.Expect(timeout).To(BeNumerically(">=", 1000))
		}
	})
}

func TestAForeignKeyViolationIsRefused(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		_, err := s.DB().Exec(`CREATE TABLE child (id INTEGER PRIMARY KEY, instance INTEGER NOT NULL REFERENCES instance (singleton))`)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = s.DB().Exec(`INSERT INTO child (id, instance) VALUES (1, 42)`)
		g.Expect(err).To(HaveOccurred())
	})
}

func TestABadDatabaseURLFailsWithoutShowingThePassword(t *testing.T) {
	ctx := context.Background()
	for name, url := range map[string]string{
		"unreachable": "postgres://platform:s3cret-pw@127.0.0.1:1/platform?connect_timeout=2",
		"unparsable":  "postgresql://platform:s3cret-pw@127.0.0.1:notaport/platform",
		"bad option":  "postgres://platform:s3cret-pw@127.0.0.1:5432/platform?sslmode=bogus",
		"unsupported": "mysql://platform:s3cret-pw@127.0.0.1/platform",
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s, err := store.Open(ctx, store.Options{DatabaseURL: url})
			if s != nil {
				s.Close()
			}
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).NotTo(ContainSubstring("s3cret-pw"))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"), "one line")
			t.Log(err)
		})
	}
}

func TestASchemaNewerThanTheBinaryIsRefused(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		ctx := context.Background()
		s, err := store.Open(ctx, opts)
		g.Expect(err).NotTo(HaveOccurred())
		// A later release applied a migration this binary does not have.
		_, err = s.DB().Exec(s.Rebind(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, ?)`), 99999, true)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(s.Close()).To(Succeed())

		s, err = store.Open(ctx, opts)
		if s != nil {
			s.Close()
		}
		g.Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("version %d, newer than this binary", 99999))))
	})
}

func TestInTxRunsAgainAfterLosingARaceButNotForever(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for name, lost := range map[string]error{
			"sqlite busy":                    sqlite3.BUSY,
			"sqlite locked":                  sqlite3.LOCKED,
			"postgres serialization failure": &pgconn.PgError{Code: "40001"},
			"postgres deadlock":              &pgconn.PgError{Code: "40P01"},
		} {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				attempts := 0
				g.Expect(s.InTx(ctx, func(*sql.Tx) error {
					attempts++
					if attempts < 3 {
						return lost
					}
					return nil
				})).To(Succeed())
				g.Expect(attempts).To(Equal(3))

				attempts = 0
				err := s.InTx(ctx, func(*sql.Tx) error { attempts++; return lost })
				g.Expect(err).To(MatchError(lost))
				g.Expect(attempts).To(Equal(10), "bounded")
			})
		}
		t.Run("other errors", func(t *testing.T) {
			g := NewWithT(t)
			attempts := 0
			err := s.InTx(ctx, func(*sql.Tx) error { attempts++; return &pgconn.PgError{Code: "23505"} })
			g.Expect(err).To(HaveOccurred())
			g.Expect(attempts).To(Equal(1))
		})
	})
}
