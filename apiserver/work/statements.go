package work

import (
	"context"
	"database/sql"
)

// txExec, txQueryRow and queryRow run the store's statements prepared once (store.Prepared), so
// that SQLite does not parse them again at every execution.
func (s *Store) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	stmt, err := s.db.Prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, stmt).ExecContext(ctx, args...)
}

func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) rowScanner {
	stmt, err := s.db.Prepared(ctx, query)
	if err != nil {
		return errRow{err}
	}
	return tx.StmtContext(ctx, stmt).QueryRowContext(ctx, args...)
}

func (s *Store) queryRow(ctx context.Context, query string, args ...any) rowScanner {
	stmt, err := s.db.Prepared(ctx, query)
	if err != nil {
		return errRow{err}
	}
	return stmt.QueryRowContext(ctx, args...)
}

// rowScanner is what *sql.Row offers, so that a failed preparation reads as a failed row.
type rowScanner interface{ Scan(...any) error }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
