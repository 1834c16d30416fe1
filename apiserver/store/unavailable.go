package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unreachable reports whether err says that the database could not be reached or went away
// (PostgreSQL restarting, shutting down, refusing connections, a broken connection), as opposed
// to a fault of the statement or the data. Such a request may succeed once the database is back:
// the service API answers it 503 with Retry-After instead of 500.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01-57P03: the server is shutting down or starting;
		// 53300: too many connections.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" ||
			pgErr.Code == "57P03" || pgErr.Code == "53300"
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	// pgx reports a connection it closed after a failure with this text only.
	return strings.Contains(err.Error(), "conn closed")
}

// pingTimeout bounds Ping: a readiness probe answers within it whatever the database does.
const pingTimeout = 2 * time.Second

// Ping reports whether the database answers a query now, within a short bound.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	var one int
	return s.db.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
}
