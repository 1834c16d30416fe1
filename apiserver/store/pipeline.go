package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// Pipelined marks the writes run with the returned context as ones whose caller reads neither
// their result nor a particular error: inside a PostgreSQL transaction such a write is sent
// with the transaction's next statement (or its commit) in one round trip, instead of in one of
// its own. Its statements run in the order they were issued, each seeing those before it; if one
// fails, the transaction's next statement or its commit returns the error and the transaction
// rolls back, so nothing is half-applied. Its result says nothing (RowsAffected is an error), and
// its arguments must not change until the transaction ends.
//
// A WorkItem's transaction is a dozen statements that read nothing back; each round trip, with
// the two context switches it costs the database and the process, was a larger share of its cost
// than the statement itself. On SQLite, and outside a transaction, the write runs at once.
func Pipelined(ctx context.Context) context.Context {
	return context.WithValue(ctx, pipelinedKey{}, true)
}

type pipelinedKey struct{}

func pipelined(ctx context.Context) bool {
	v, _ := ctx.Value(pipelinedKey{}).(bool)
	return v
}

// maxPipelined bounds the writes a connection holds before it sends them anyway.
const maxPipelined = 64

// pipelining gives database/sql connections that hold Pipelined writes (and the BEGIN of a
// transaction) until the next statement that needs the server's answer.
type pipelining struct {
	driver.Connector
}

func (p pipelining) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := p.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(*stdlib.Conn)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("store: the PostgreSQL driver's connection is not pgx's")
	}
	return &pipelinedConn{Conn: inner}, nil
}

// pipelinedConn is pgx's database/sql connection with the statements it has not sent yet.
// database/sql uses a connection from one goroutine at a time.
type pipelinedConn struct {
	*stdlib.Conn
	// held are the statements not sent yet, in order: a BEGIN first when the transaction has
	// sent nothing yet, then Pipelined writes.
	held []heldStatement
	// beginHeld: the transaction's BEGIN is held (its first statement has not been sent).
	beginHeld bool
	// inTx: a transaction begun here is open.
	inTx bool
}

type heldStatement struct {
	sql  string
	args []any
}

const (
	beginStatement    = "begin"
	commitStatement   = "commit"
	rollbackStatement = "rollback"
)

// BeginTx holds the BEGIN of a transaction with the default options until its first statement;
// a transaction with other options begins at once, as pgx begins it, and runs its Pipelined
// writes at once.
func (c *pipelinedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.inTx {
		return nil, errors.New("store: a transaction is already open on the connection")
	}
	if opts.Isolation != 0 || opts.ReadOnly {
		return c.Conn.BeginTx(ctx, opts)
	}
	if c.Conn.Conn().IsClosed() {
		return nil, driver.ErrBadConn
	}
	c.held = append(c.held[:0], heldStatement{sql: beginStatement})
	c.beginHeld, c.inTx = true, true
	return &pipelinedTx{c: c, ctx: ctx}, nil
}

// ExecContext holds a Pipelined write of an open transaction; any other statement is sent with
// the held ones before it, in one round trip.
func (c *pipelinedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if c.inTx && pipelined(ctx) && len(c.held) < maxPipelined {
		c.held = append(c.held, heldStatement{sql: query, args: argValues(args)})
		return heldResult{}, nil
	}
	if len(c.held) == 0 {
		return c.Conn.ExecContext(ctx, query, args)
	}
	tag, err := c.sendWith(ctx, heldStatement{sql: query, args: argValues(args)})
	if err != nil {
		return nil, err
	}
	return driver.RowsAffected(tag.RowsAffected()), nil
}

// argValues are the arguments as pgx takes them (pgx's CheckNamedValue passes every value).
func argValues(args []driver.NamedValue) []any {
	values := make([]any, len(args))
	for i, a := range args {
		values[i] = a.Value
	}
	return values
}

// QueryContext sends the held statements first: the query must see them.
func (c *pipelinedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.send(ctx); err != nil {
		return nil, err
	}
	return c.Conn.QueryContext(ctx, query, args)
}

// PrepareContext sends the held statements first: the prepared statement runs after them.
func (c *pipelinedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := c.send(ctx); err != nil {
		return nil, err
	}
	return c.Conn.PrepareContext(ctx, query)
}

// send sends the held statements, if any.
func (c *pipelinedConn) send(ctx context.Context) error {
	if len(c.held) == 0 {
		return nil
	}
	_, err := c.sendWith(ctx)
	return err
}

// sendWith sends the held statements and then last (if given) in one round trip, and returns
// the command tag of the last statement sent. The held statements are gone either way: a
// failed one leaves the transaction failed, to be rolled back.
func (c *pipelinedConn) sendWith(ctx context.Context, last ...heldStatement) (tag pgconn.CommandTag, err error) {
	statements := append(c.held, last...)
	defer clear(statements) // the arguments are not kept past the round trip
	c.held, c.beginHeld = c.held[:0], false
	batch := &pgx.Batch{}
	for _, s := range statements {
		batch.Queue(s.sql, s.args...)
	}
	results := c.Conn.Conn().SendBatch(ctx, batch)
	for i := range statements {
		t, err := results.Exec()
		if err != nil {
			_ = results.Close()
			if i < len(statements)-len(last) && statements[i].sql != beginStatement {
				return tag, fmt.Errorf("an earlier write of the transaction: %w", err)
			}
			return tag, err
		}
		tag = t
	}
	return tag, results.Close()
}

// heldResult is the result of a write that was held: nothing is known of it yet.
type heldResult struct{}

func (heldResult) LastInsertId() (int64, error) {
	return 0, errors.New("store: a pipelined write has no insert id")
}

func (heldResult) RowsAffected() (int64, error) {
	return 0, errors.New("store: a pipelined write's rows are not known when it returns")
}

// ResetSession refuses a connection that a transaction left statements on (database/sql ends
// every transaction first: this is a safeguard), then checks it as pgx does.
func (c *pipelinedConn) ResetSession(ctx context.Context) error {
	if c.inTx || len(c.held) > 0 {
		return driver.ErrBadConn
	}
	return c.Conn.ResetSession(ctx)
}

// pipelinedTx commits with the held statements in one round trip.
type pipelinedTx struct {
	c   *pipelinedConn
	ctx context.Context
}

func (t *pipelinedTx) Commit() error {
	c := t.c
	defer func() { c.inTx = false }()
	if c.beginHeld && len(c.held) == 1 {
		c.held, c.beginHeld = c.held[:0], false
		return nil // nothing was sent: nothing to commit
	}
	tag, err := c.sendWith(t.ctx, heldStatement{sql: commitStatement})
	if err != nil {
		// A failed statement left the transaction open (failed): end it here, as database/sql
		// does not roll back after a failed commit. A broken or cancelled connection is
		// discarded by the pool instead (ResetSession sees the open transaction).
		if conn := c.Conn.Conn(); !conn.IsClosed() && conn.PgConn().TxStatus() != 'I' {
			_, _ = conn.Exec(t.ctx, rollbackStatement)
		}
		return err
	}
	if tag.String() == "ROLLBACK" {
		// The transaction had failed: COMMIT rolled it back.
		return pgx.ErrTxCommitRollback
	}
	return nil
}

func (t *pipelinedTx) Rollback() error {
	c := t.c
	defer func() { c.inTx = false }()
	sent := !c.beginHeld
	c.held, c.beginHeld = c.held[:0], false
	if !sent {
		return nil // nothing was sent: nothing to roll back
	}
	if c.Conn.Conn().IsClosed() {
		return driver.ErrBadConn
	}
	_, err := c.Conn.Conn().Exec(t.ctx, rollbackStatement)
	return err
}

// PgxConn is the pgx connection under dc, a driver connection of a PostgreSQL store that
// database/sql's Conn.Raw hands out, for what database/sql cannot do (LISTEN); ok is false on
// SQLite. The connection must hold no transaction of database/sql's.
func PgxConn(dc any) (conn *pgx.Conn, ok bool) {
	switch c := dc.(type) {
	case *pipelinedConn:
		return c.Conn.Conn(), !c.inTx
	case *stdlib.Conn:
		return c.Conn(), true
	}
	return nil, false
}
