package work

import (
	"context"
	"database/sql"
)

// txExec, txQueryRow and queryRow run the store's statements rebound to the dialect; the SQLite
// connections keep them prepared (store's statement cache), PostgreSQL's driver does the same.
func (s *Store) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	return tx.ExecContext(ctx, s.db.Rebind(query), args...)
}

func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) rowScanner {
	return tx.QueryRowContext(ctx, s.db.Rebind(query), args...)
}

func (s *Store) queryRow(ctx context.Context, query string, args ...any) rowScanner {
	return s.db.DB().QueryRowContext(ctx, s.db.Rebind(query), args...)
}

// rowScanner is what *sql.Row offers.
type rowScanner interface{ Scan(...any) error }
