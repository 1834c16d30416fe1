package store_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
)

// The SQLite connections keep their statements prepared; reusing one must never change what a
// query returns: a query may run again while its own rows are still open, a statement that
// failed answers the next caller normally, and a read on a connection sees what another
// connection committed after that connection's previous read of the same query.
func TestReusedStatementsAnswerLikeFreshOnes(t *testing.T) {
	// SQLite alone: PostgreSQL's connections cannot run a query while the rows of another are open.
	g := NewWithT(t)
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{DataDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	defer s.Close()
	db := s.DB()
	_, err = db.ExecContext(ctx, `CREATE TABLE reused (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`)
	g.Expect(err).NotTo(HaveOccurred())
	insert, count := s.Rebind(`INSERT INTO reused (id, n) VALUES (?, ?)`), s.Rebind(`SELECT n FROM reused WHERE id >= ? ORDER BY id`)
	for i := range 3 {
		_, err := db.ExecContext(ctx, insert, i, i*10)
		g.Expect(err).NotTo(HaveOccurred())
	}

	// The same query inside the iteration of its own rows, on one connection.
	conn, err := db.Conn(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, count, 0)
	g.Expect(err).NotTo(HaveOccurred())
	var outer, inner []int
	for rows.Next() {
		var n int
		g.Expect(rows.Scan(&n)).To(Succeed())
		outer = append(outer, n)
		var first int
		g.Expect(conn.QueryRowContext(ctx, count, n/10).Scan(&first)).To(Succeed())
		inner = append(inner, first)
	}
	g.Expect(rows.Err()).NotTo(HaveOccurred())
	g.Expect(rows.Close()).To(Succeed())
	g.Expect(outer).To(Equal([]int{0, 10, 20}))
	g.Expect(inner).To(Equal([]int{0, 10, 20}))

	// A failed execution (a duplicate key) leaves the statement usable.
	_, err = conn.ExecContext(ctx, insert, 1, 99)
	g.Expect(err).To(HaveOccurred())
	_, err = conn.ExecContext(ctx, insert, 3, 30)
	g.Expect(err).NotTo(HaveOccurred())

	// A read after another connection's commit sees it.
	var before, after int
	g.Expect(conn.QueryRowContext(ctx, count, 3).Scan(&before)).To(Succeed())
	other, err := db.Conn(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	defer other.Close()
	_, err = other.ExecContext(ctx, s.Rebind(`UPDATE reused SET n = ? WHERE id = ?`), 31, 3)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conn.QueryRowContext(ctx, count, 3).Scan(&after)).To(Succeed())
	g.Expect([]int{before, after}).To(Equal([]int{30, 31}))
}
