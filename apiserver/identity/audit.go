package identity

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"time"

	"platform.dev/platform/apiserver/store"
)

// Audit actions, exactly as the spec names them.
const (
	ActionInstanceBootstrapped          = "instance.bootstrapped"
	ActionPlatformAdministratorGranted  = "platform-administrator.granted"
	ActionPlatformAdministratorRevoked  = "platform-administrator.revoked"
	ActionLocalAccountLogin             = "local-account.login"
	ActionLocalAccountLogout            = "local-account.logout"
	ActionLocalAccountCreated           = "local-account.created"
	ActionLocalAccountEnabled           = "local-account.enabled"
	ActionLocalAccountDisabled          = "local-account.disabled"
	ActionLocalAccountPasswordChanged   = "local-account.password-changed"
	ActionLocalAccountSessionsRevoked   = "local-account.sessions-revoked"
	ActionExternalIdentityLinked        = "external-identity.linked"
	ActionExternalIdentityUnlinked      = "external-identity.unlinked"
	ActionWorkspaceMembershipSet        = "workspace-membership.set"
	ActionWorkspaceMembershipRemoved    = "workspace-membership.removed"
	ActionPersonalAccessTokenCreated    = "personal-access-token.created"
	ActionPersonalAccessTokenRevoked    = "personal-access-token.revoked"
	ActionPersonalAccessTokenRevokedAll = "personal-access-token.revoked-all"
	// ActionResumeTokenReissued records that a person was given a fresh resume token for an open
	// pending action (its target): who, which, when; never the token.
	ActionResumeTokenReissued = "pending-action.resume-token-reissued"
	// ActionSourceRegistryTrustPolicyChanged records that a Source registry registration's trust
	// policy changed (target: the registration's UID; reason: the new policy).
	ActionSourceRegistryTrustPolicyChanged = "source-registry.trust-policy-changed"
)

var knownActions = map[string]bool{
	ActionInstanceBootstrapped: true, ActionPlatformAdministratorGranted: true, ActionPlatformAdministratorRevoked: true,
	ActionLocalAccountLogin: true, ActionLocalAccountLogout: true, ActionLocalAccountCreated: true,
	ActionLocalAccountEnabled: true, ActionLocalAccountDisabled: true, ActionLocalAccountPasswordChanged: true,
	ActionLocalAccountSessionsRevoked: true, ActionExternalIdentityLinked: true, ActionExternalIdentityUnlinked: true,
	ActionWorkspaceMembershipSet: true, ActionWorkspaceMembershipRemoved: true, ActionPersonalAccessTokenCreated: true,
	ActionPersonalAccessTokenRevoked: true, ActionPersonalAccessTokenRevokedAll: true, ActionResumeTokenReissued: true,
	ActionSourceRegistryTrustPolicyChanged: true,
}

// Audit outcomes.
const (
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
)

// MaxAuditRead is the spec's limit on one audit read: the 200 latest events.
const MaxAuditRead = 200

// Reason codes and ids are bounded tokens, never free text: a record holds no usernames,
// e-mail addresses, passwords, tokens or request details.
var (
	reasonCodePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,63}$`)
	idPattern         = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
)

// Event is one security audit record. ActorID and TargetID are stable ids (principal ids);
// TenantID and WorkspaceID are the optional scope.
type Event struct {
	ID            string
	OccurredAt    time.Time
	Action        string
	Outcome       string
	ActorID       string
	TargetID      string
	TenantID      string
	WorkspaceID   string
	ReasonCode    string
	CorrelationID string
}

type correlationKey struct{}

// WithCorrelationID returns a context whose audit records carry id (the trace correlation id)
// unless the event names its own.
func WithCorrelationID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, correlationKey{}, id)
}

// Audit appends security audit events and reads the latest ones.
type Audit struct {
	Store *store.Store
	// Clock stamps events that have no OccurredAt; time.Now when nil.
	Clock func() time.Time
}

func (a *Audit) now() time.Time {
	if a.Clock != nil {
		return a.Clock().UTC()
	}
	return time.Now().UTC()
}

// Record appends e in tx, the transaction of the change it records, so that the change and its
// record commit or roll back together. The action must be one the spec names, the outcome
// success or failure, ids and the reason code bounded tokens.
func (a *Audit) Record(ctx context.Context, tx *sql.Tx, e Event) error {
	if !knownActions[e.Action] {
		return fmt.Errorf("audit: unknown action %q", e.Action)
	}
	if e.Outcome != OutcomeSuccess && e.Outcome != OutcomeFailure {
		return fmt.Errorf("audit: outcome must be %s or %s", OutcomeSuccess, OutcomeFailure)
	}
	if e.ReasonCode != "" && !reasonCodePattern.MatchString(e.ReasonCode) {
		return fmt.Errorf("audit: reason code must be a short lowercase token")
	}
	if e.CorrelationID == "" {
		e.CorrelationID, _ = ctx.Value(correlationKey{}).(string)
	}
	for _, id := range []string{e.ActorID, e.TargetID, e.TenantID, e.WorkspaceID, e.CorrelationID} {
		if id != "" && !idPattern.MatchString(id) {
			return fmt.Errorf("audit: ids must be bounded tokens")
		}
	}
	if e.ID == "" {
		e.ID = newID()
	}
	if e.OccurredAt.IsZero() {
		e.OccurredAt = a.now()
	}
	_, err := tx.ExecContext(ctx, a.Store.Rebind(`INSERT INTO audit_events
		(id, occurred_at, action, outcome, actor_id, target_id, tenant_id, workspace_id, reason_code, correlation_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		e.ID, e.OccurredAt.UTC(), e.Action, e.Outcome, e.ActorID, e.TargetID,
		nullString(e.TenantID), nullString(e.WorkspaceID), e.ReasonCode, e.CorrelationID)
	if err != nil {
		return fmt.Errorf("audit: record %s: %w", e.Action, err)
	}
	return nil
}

// RecordAlone appends e in a transaction of its own, for a change whose state lives outside the
// store (a kube object) and is recorded once it is made.
func (a *Audit) RecordAlone(ctx context.Context, e Event) error {
	return a.Store.InTx(ctx, func(tx *sql.Tx) error { return a.Record(ctx, tx, e) })
}

// Latest returns the newest events first, at most limit of them; a limit outside 1..200 reads
// 200 (the spec's cap).
func (a *Audit) Latest(ctx context.Context, limit int) ([]Event, error) {
	if limit <= 0 || limit > MaxAuditRead {
		limit = MaxAuditRead
	}
	rows, err := a.Store.DB().QueryContext(ctx, a.Store.Rebind(`SELECT id, occurred_at, action, outcome, actor_id,
		target_id, tenant_id, workspace_id, reason_code, correlation_id
		FROM audit_events ORDER BY seq DESC LIMIT ?`), limit)
	if err != nil {
		return nil, fmt.Errorf("audit: read: %w", err)
	}
	defer rows.Close()
	var events []Event
	for rows.Next() {
		var (
			e                 Event
			tenant, workspace sql.NullString
		)
		if err := rows.Scan(&e.ID, &e.OccurredAt, &e.Action, &e.Outcome, &e.ActorID, &e.TargetID,
			&tenant, &workspace, &e.ReasonCode, &e.CorrelationID); err != nil {
			return nil, fmt.Errorf("audit: read: %w", err)
		}
		e.TenantID, e.WorkspaceID = tenant.String, workspace.String
		events = append(events, e)
	}
	return events, rows.Err()
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
