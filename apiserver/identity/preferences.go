package identity

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Theme is the colour scheme a Principal prefers.
type Theme string

// Themes.
const (
	ThemeSystem Theme = "System"
	ThemeLight  Theme = "Light"
	ThemeDark   Theme = "Dark"
)

// ErrInvalidTheme is returned for a theme other than System, Light or Dark.
var ErrInvalidTheme = errors.New("identity: a theme is System, Light or Dark")

// Preferences are the global preferences of one Principal.
type Preferences struct {
	PrincipalID string
	Theme       Theme
	// UpdatedAt is zero while the Principal never saved preferences (the defaults apply).
	UpdatedAt time.Time
}

// Preferences reads the Principal's preferences: the defaults (theme System) until it saves
// some. ErrPrincipalNotFound when there is no such Principal.
func (s *Service) Preferences(ctx context.Context, principalID string) (Preferences, error) {
	if _, err := s.readPrincipal(ctx, s.Store.DB(), principalID); errors.Is(err, ErrNotFound) {
		return Preferences{}, ErrPrincipalNotFound
	} else if err != nil {
		return Preferences{}, err
	}
	p := Preferences{PrincipalID: principalID, Theme: ThemeSystem}
	var theme string
	err := s.Store.DB().QueryRowContext(ctx, s.q(`SELECT theme, updated_at FROM principal_preferences WHERE principal_id = ?`), principalID).
		Scan(&theme, &p.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return p, nil
	}
	p.Theme = Theme(theme)
	return p, err
}

// SetPreferences replaces the Principal's preferences.
func (s *Service) SetPreferences(ctx context.Context, principalID string, theme Theme) (Preferences, error) {
	switch theme {
	case ThemeSystem, ThemeLight, ThemeDark:
	default:
		return Preferences{}, ErrInvalidTheme
	}
	p := Preferences{PrincipalID: principalID, Theme: theme, UpdatedAt: s.now()}
	err := s.Store.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := s.readPrincipal(ctx, tx, principalID); errors.Is(err, ErrNotFound) {
			return ErrPrincipalNotFound
		} else if err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO principal_preferences (principal_id, theme, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (principal_id) DO UPDATE SET theme = excluded.theme, updated_at = excluded.updated_at`),
			principalID, string(theme), p.UpdatedAt)
		return err
	})
	if err != nil {
		return Preferences{}, fmt.Errorf("set preferences: %w", err)
	}
	return p, nil
}
