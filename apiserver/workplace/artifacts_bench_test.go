package workplace

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"database/sql"
	"fmt"
	"io"
	"testing"
	"time"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// BenchmarkArtifactBytesInADirectoryOrInPostgreSQL measures what storing one artifact and reading
// it back costs where replicas could share its bytes: files of the artifact directory
// (FileArtifacts: a temporary file written, synced and renamed, then read) or a bytea row of
// PostgreSQL (inserted in its own transaction, then selected), as the issue of the cluster asks
// ("choose and measure"). The bytes are random, as compressed deliverables are, so that
// PostgreSQL's TOAST compression does not flatter it. Both are durable: the benchmark's
// PostgreSQL runs with fsync on, and the directory syncs each file. rawcommits/s is the
// PostgreSQL server's ceiling in the same run: single-row commits a second.
func BenchmarkArtifactBytesInADirectoryOrInPostgreSQL(b *testing.B) {
	storetest.ForEachDialectBench(b, func(b *testing.B, s *store.Store) {
		if s.Dialect() != store.Postgres {
			b.Skip("one process owns a SQLite store: artifact bytes stay files of its data directory")
		}
		ctx := context.Background()
		ceiling := storetest.RawCommitsPerSecond(b, s, time.Second)
		table := fmt.Sprintf("bench_artifact_blobs_%d", time.Now().UnixNano())
		if _, err := s.DB().ExecContext(ctx, `CREATE TABLE `+table+` (key TEXT PRIMARY KEY, bytes BYTEA NOT NULL)`); err != nil {
			b.Fatal(err)
		}
		for _, size := range []int{64 << 10, 1 << 20} {
			payload := make([]byte, size)
			_, _ = crand.Read(payload)
			b.Run(fmt.Sprintf("size=%dKiB/directory", size>>10), func(b *testing.B) {
				files := FileArtifacts{Dir: b.TempDir()}
				b.SetBytes(int64(size))
				for b.Loop() {
					key, _, err := files.Put(ctx, bytes.NewReader(payload))
					if err != nil {
						b.Fatal(err)
					}
					r, err := files.Open(ctx, key)
					if err != nil {
						b.Fatal(err)
					}
					if n, err := io.Copy(io.Discard, r); err != nil || n != int64(size) {
						b.Fatalf("read %d bytes: %v", n, err)
					}
					r.Close()
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "artifacts/s")
			})
			b.Run(fmt.Sprintf("size=%dKiB/postgres", size>>10), func(b *testing.B) {
				insert := s.Rebind(`INSERT INTO ` + table + ` (key, bytes) VALUES (?, ?)`)
				read := s.Rebind(`SELECT bytes FROM ` + table + ` WHERE key = ?`)
				b.SetBytes(int64(size))
				for b.Loop() {
					key := crand.Text() // a new key each time, as FileArtifacts.Put makes one
					if err := s.InTx(ctx, func(tx *sql.Tx) error {
						_, err := tx.ExecContext(ctx, insert, key, payload)
						return err
					}); err != nil {
						b.Fatal(err)
					}
					var got []byte
					if err := s.DB().QueryRowContext(ctx, read, key).Scan(&got); err != nil || len(got) != size {
						b.Fatalf("read %d bytes: %v", len(got), err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "artifacts/s")
				b.ReportMetric(ceiling, "rawcommits/s")
			})
		}
	})
}
