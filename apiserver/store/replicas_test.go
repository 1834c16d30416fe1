package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// Replicas starting together on a fresh database take turns at the migration (an advisory lock):
// every one opens, and every migration is recorded once.
func TestReplicasOpeningAFreshDatabaseTogetherMigrateItOnce(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		if opts.DatabaseURL == "" {
			t.Skip("one process owns a SQLite database: there are no other replicas")
		}
		g := NewWithT(t)
		const replicas = 3
		stores := make([]*store.Store, replicas)
		errs := make([]error, replicas)
		var wg sync.WaitGroup
		for i := range replicas {
			wg.Go(func() { stores[i], errs[i] = store.Open(context.Background(), opts) })
		}
		wg.Wait()
		for i := range replicas {
			g.Expect(errs[i]).NotTo(HaveOccurred(), "replica %d", i)
			defer stores[i].Close()
		}
		versions := appliedVersions(t, stores[0])
		seen := map[int64]int{}
		for _, v := range versions {
			seen[v]++
		}
		for v, n := range seen {
			g.Expect(n).To(Equal(1), "migration %d recorded %d times", v, n)
		}
		ids := map[string]bool{}
		for _, s := range stores {
			in, err := s.Instance(context.Background())
			g.Expect(err).NotTo(HaveOccurred())
			ids[in.ID] = true
		}
		g.Expect(ids).To(HaveLen(1), "one instance row, whichever replica wrote it")
	})
}

// A PostgreSQL restart is survived: while it is down, Ping fails and what the statements fail
// with says "unreachable" (the service API answers 503 with Retry-After); once it is back, the
// same pool answers again without a reopen.
func TestTheStoreReportsPostgreSQLDownAndRecoversByItselfWhenItIsBack(t *testing.T) {
	pg := storetest.StartPostgres(t)
	g := NewWithT(t)
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{DatabaseURL: pg.Database(t)})
	g.Expect(err).NotTo(HaveOccurred())
	defer s.Close()
	g.Expect(s.Ping(ctx)).To(Succeed())

	g.Expect(pg.Stop()).To(Succeed())
	g.Expect(s.Ping(ctx)).NotTo(Succeed())
	// Every pooled connection is dead now: each statement fails as unreachable, none otherwise.
	for range 5 {
		_, err := s.Instance(ctx)
		g.Expect(err).To(HaveOccurred())
		g.Expect(store.Unreachable(err)).To(BeTrue(), "%v", err)
	}

	g.Expect(pg.Start()).To(Succeed())
	g.Eventually(func() error { return s.Ping(ctx) }).WithTimeout(10 * time.Second).Should(Succeed())
	_, err = s.Instance(ctx)
	g.Expect(err).NotTo(HaveOccurred())
}

func TestOnlyErrorsOfReachingTheDatabaseAreUnreachable(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"a refused connection":           {&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		"the server shutting down":       {&pgconn.PgError{Code: "57P01"}, true},
		"the server starting":            {&pgconn.PgError{Code: "57P03"}, true},
		"a connection exception":         {&pgconn.PgError{Code: "08006"}, true},
		"too many connections":           {&pgconn.PgError{Code: "53300"}, true},
		"a connection cut mid-answer":    {fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		"a unique violation":             {&pgconn.PgError{Code: "23505"}, false},
		"a serialization failure":        {&pgconn.PgError{Code: "40001"}, false},
		"a canceled request":             {context.Canceled, false},
		"an error of the platform's own": {errors.New("identity: not found"), false},
		"no error":                       {nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := store.Unreachable(tc.err); got != tc.want {
				t.Fatalf("Unreachable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
