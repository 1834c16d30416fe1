package store

import "database/sql"

// Strings reads the one text column of every row and closes rows: the ids a statement selected
// before the transaction changes them one by one.
func Strings(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
