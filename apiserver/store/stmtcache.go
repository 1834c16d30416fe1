package store

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/ncruces/go-sqlite3"
)

// maxCachedStatements bounds the prepared statements kept per SQLite connection; queries beyond
// it are prepared and finalized at each use, as without the cache.
const maxCachedStatements = 512

// statementCache keeps each SQLite connection's prepared statements for reuse: database/sql
// prepares and finalizes a statement at every Exec and Query that has arguments, and parsing
// it again was a sixth of the CPU of the Work path. Every plane's queries get it without
// preparing anything themselves.
type statementCache struct {
	driver.Connector
	counter *counter
}

func (c statementCache) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(sqliteConn)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("store: the SQLite driver's connection lacks the methods the statement cache needs")
	}
	return &cachingConn{sqliteConn: inner, statements: map[string]*cachedStatement{}, counter: c.counter}, nil
}

// sqliteConn is what the SQLite driver's connection implements and database/sql asks of it.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.NamedValueChecker
}

// cachingConn lends a cached statement to one user at a time (database/sql uses a connection
// from one goroutine at a time, but a query may run while the rows of the same query are still
// open): a statement in use is never lent twice, the second user gets one of its own.
type cachingConn struct {
	sqliteConn
	statements map[string]*cachedStatement
	counter    *counter
}

// ExecContext runs a statement without arguments at once (with arguments the driver skips to
// preparing it, which counts it when it runs).
func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	result, err := c.sqliteConn.ExecContext(ctx, query, args)
	if !errors.Is(err, driver.ErrSkip) {
		c.counter.statement(query)
	}
	return result, err
}

func (c *cachingConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if s, ok := c.statements[query]; ok && !s.lent {
		s.lent = true
		return s, nil
	}
	stmt, err := c.sqliteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	inner, ok := stmt.(sqliteStmt)
	if !ok {
		_ = stmt.Close()
		return nil, errors.New("store: the SQLite driver's statement lacks the methods the statement cache needs")
	}
	s := &cachedStatement{sqliteStmt: inner, lent: true, query: query, counter: c.counter}
	if _, taken := c.statements[query]; !taken && len(c.statements) < maxCachedStatements {
		s.cached = true
		c.statements[query] = s
	}
	return s, nil
}

func (c *cachingConn) Close() error {
	var errs []error
	for _, s := range c.statements {
		errs = append(errs, s.sqliteStmt.Close())
	}
	c.statements = nil
	return errors.Join(append(errs, c.sqliteConn.Close())...)
}

// sqliteStmt is what the SQLite driver's statement implements and database/sql asks of it.
type sqliteStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
	driver.NamedValueChecker
	// Reset ends the statement's execution, so that a statement back in the cache holds no read
	// snapshot open.
	Reset() error
}

// cachedStatement is returned to its connection's cache when database/sql closes it (after an
// Exec, or when the rows of a Query close, which resets it).
// One that is not cached (its query's is lent, or the cache is full) is finalized instead.
type cachedStatement struct {
	sqliteStmt
	lent    bool
	cached  bool
	query   string
	counter *counter
}

func (s *cachedStatement) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.counter.statement(s.query)
	return s.sqliteStmt.ExecContext(ctx, args)
}

func (s *cachedStatement) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.counter.statement(s.query)
	return s.sqliteStmt.QueryContext(ctx, args)
}

// replanned is what the SQLite driver's statement tells of its executions.
type replanned interface {
	Status(op sqlite3.StmtStatus, reset bool) int
}

func (s *cachedStatement) Close() error {
	if st, ok := s.sqliteStmt.(replanned); ok {
		s.counter.replans.Add(int64(st.Status(sqlite3.STMTSTATUS_REPREPARE, true)))
	}
	if !s.cached {
		return s.sqliteStmt.Close()
	}
	s.lent = false
	// Reset repeats the error of a failed last step, which its user has already seen.
	_ = s.Reset()
	return nil
}
