package httpapi

import (
	"context"
	"net/http"
)

// EscalatedCode is the stable code of the 403 of an answer to an escalated question by someone
// it is no longer addressed to.
const EscalatedCode = "EscalatedToAdministrators"

// MayAnswer refuses an answer to the run's open question actionID once it was escalated on
// expiry (re-addressed to the workspace's Owners and Admins) when the caller is neither an Owner
// nor an Admin of the workspace or of its tenant: 403 Problem Details that say why. Any other
// question, and a caller that may answer, is nil; what Respond checks (the workspace, the
// action, its state) is left to it.
func (s *Server) MayAnswer(ctx context.Context, principalID, workspaceID, runID, actionID string) error {
	if s.work == nil || s.identity == nil {
		return nil
	}
	a, err := s.work.OpenPendingAction(ctx, runID)
	if err != nil {
		return Problem(err)
	}
	if a == nil || a.ID != actionID || a.WorkspaceID != workspaceID || a.EscalatedAt.IsZero() {
		return nil
	}
	ok, err := s.identity.IsOwnerOrAdmin(ctx, principalID, workspaceID)
	if err != nil {
		return Problem(err)
	}
	if ok {
		return nil
	}
	return NewCodedProblem(http.StatusForbidden, EscalatedCode,
		"nobody answered this question in time and it was escalated to the workspace's Owners and Admins: only they may answer it now", nil)
}

// MayAnswerEscalated reports whether the caller may answer a question escalated in the request's
// workspace: an Owner or Admin of it or of its tenant (the Workplace offers the answer only then).
func (s *Server) MayAnswerEscalated(ctx context.Context, rc RequestContext) (bool, error) {
	if s.identity == nil {
		return true, nil
	}
	return s.identity.IsOwnerOrAdmin(ctx, rc.PrincipalID, rc.WorkspaceID)
}
