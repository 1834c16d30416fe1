package store

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// Counts are what the store has run so far, counted where the statements go to the database
// (the SQLite connections' statement path, pgx's query tracer): what a path costs in statements
// and transactions is read, not estimated.
type Counts struct {
	// Statements are the SQL statements executed, reads and writes, transaction control
	// (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE) excluded.
	Statements int64
	// Transactions are the transactions the store's callers ran (InTx and GroupInTx, each
	// attempt); transactions that share a commit count one each.
	Transactions int64
	// Commits are the commits the database made durable: several grouped transactions share one.
	Commits int64
	// RoundTrips are the exchanges with the PostgreSQL server: one per statement sent alone,
	// transaction control included, and one per group of statements sent together (Pipelined).
	// Always 0 on SQLite, which runs in the process.
	RoundTrips int64
	// Replans are the executions of a prepared statement that SQLite parsed and planned again
	// first, as it does at every execution of a statement whose plan depends on a bound value
	// (a parameter compared with the condition of a partial index, a LIKE pattern): what the
	// statement cache exists to save. Always 0 on PostgreSQL.
	Replans int64
}

// Sub is c minus an earlier reading.
func (c Counts) Sub(earlier Counts) Counts {
	return Counts{
		Statements:   c.Statements - earlier.Statements,
		Transactions: c.Transactions - earlier.Transactions,
		Commits:      c.Commits - earlier.Commits,
		Replans:      c.Replans - earlier.Replans,
		RoundTrips:   c.RoundTrips - earlier.RoundTrips,
	}
}

// Counts returns what the store has run since it was opened.
func (s *Store) Counts() Counts {
	return Counts{
		Statements:   s.counter.statements.Load(),
		Transactions: s.counter.transactions.Load(),
		Commits:      s.counter.commits.Load(),
		Replans:      s.counter.replans.Load(),
		RoundTrips:   s.counter.roundTrips.Load(),
	}
}

// maxRecorded bounds what one RecordStatements keeps.
const maxRecorded = 10000

// RecordStatements keeps the text of every statement the store runs from now until the returned
// stop is called, which returns them in order (at most maxRecorded): tests list what a path
// runs. One recording at a time; a second call ends the first.
func (s *Store) RecordStatements() (stop func() []string) {
	r := &recording{}
	s.counter.recording.Store(r)
	return func() []string {
		s.counter.recording.CompareAndSwap(r, nil)
		r.mu.Lock()
		defer r.mu.Unlock()
		return append([]string(nil), r.queries...)
	}
}

type recording struct {
	mu      sync.Mutex
	queries []string
}

// counter is shared by the store and its connections.
type counter struct {
	statements   atomic.Int64
	transactions atomic.Int64
	commits      atomic.Int64
	replans      atomic.Int64
	roundTrips   atomic.Int64
	recording    atomic.Pointer[recording]
}

// statement counts one statement the database runs; transaction control is not counted.
func (c *counter) statement(query string) {
	if transactionControl(query) {
		return
	}
	c.statements.Add(1)
	if r := c.recording.Load(); r != nil {
		r.mu.Lock()
		if len(r.queries) < maxRecorded {
			r.queries = append(r.queries, query)
		}
		r.mu.Unlock()
	}
}

// transactionControl reports whether query only begins, ends or marks a transaction.
func transactionControl(query string) bool {
	q := strings.TrimSpace(query)
	word, _, _ := strings.Cut(q, " ")
	switch strings.ToUpper(word) {
	case "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "END":
		return true
	}
	return false
}

// TraceQueryStart counts each query pgx sends to PostgreSQL (pgx.QueryTracer).
func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.roundTrips.Add(1)
	c.statement(data.SQL)
	return ctx
}

// TraceQueryEnd is the end of a query pgx sent (pgx.QueryTracer): nothing to count.
func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart is the start of the statements a connection sends together (Pipelined):
// each is counted as it completes (pgx.BatchTracer).
func (c *counter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.roundTrips.Add(1)
	return ctx
}

// TraceBatchQuery counts one of the statements sent together (pgx.BatchTracer).
func (c *counter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	c.statement(data.SQL)
}

// TraceBatchEnd is the end of the statements sent together (pgx.BatchTracer).
func (c *counter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
