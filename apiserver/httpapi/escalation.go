package httpapi

import (
	"context"
	"database/sql"
)

// EscalatedCode is the stable code of the 403 of an answer to an escalated question by someone
// it is no longer addressed to.
const EscalatedCode = "EscalatedToAdministrators"

// EscalatedDetail says why such an answer is refused, in the words a person reads.
const EscalatedDetail = "nobody answered this question in time and it was escalated to the workspace's Owners and Admins: only they may answer it now"

// MayAnswerEscalated reports whether the caller may answer a question escalated in the request's
// workspace: an Owner or Admin of it or of its tenant, or a Platform administrator (the Workplace
// offers the answer only then).
func (s *Server) MayAnswerEscalated(ctx context.Context, rc RequestContext) (bool, error) {
	if s.identity == nil {
		return true, nil
	}
	return s.identity.IsOwnerOrAdmin(ctx, rc.PrincipalID, rc.WorkspaceID)
}

// EscalationCheck is the work store's Response.MayAnswerEscalated for the request's caller: the
// role is read in the answer's own transaction, so an escalation committed after any earlier
// check cannot let anyone but the workspace's Owners and Admins answer.
func (s *Server) EscalationCheck(principalID, workspaceID string) func(context.Context, *sql.Tx) (bool, error) {
	return func(ctx context.Context, tx *sql.Tx) (bool, error) {
		if s.identity == nil {
			return true, nil
		}
		return s.identity.IsOwnerOrAdminIn(ctx, tx, principalID, workspaceID)
	}
}
