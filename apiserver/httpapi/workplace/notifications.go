package workplace

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/work"
	domain "platform.dev/platform/apiserver/workplace"
)

// Notification tells the caller about something that needs attention.
type Notification struct {
	ID            string `json:"id"`
	Kind          string `json:"kind" enum:"question,task-completed,task-failed"`
	Attention     bool   `json:"attention" doc:"A question waiting for an answer, or a failure"`
	Title         string `json:"title"`
	TaskID        string `json:"taskId,omitempty"`
	InteractionID string `json:"interactionId,omitempty"`
	// PendingActionID names the question of a question notification, answerable where it is shown.
	PendingActionID string     `json:"pendingActionId,omitempty" doc:"The question a question notification is about"`
	Resolved        bool       `json:"resolved,omitempty" doc:"The question no longer waits: answered, expired or closed (resolution)"`
	Resolution      string     `json:"resolution,omitempty" enum:"answered,expired,closed"`
	ResolvedAt      *time.Time `json:"resolvedAt,omitempty"`
	// EscalatedAt and MayAnswer let a page say, before anyone clicks, that the question now waits
	// for the workspace's Owners and Admins and whether the caller is one of them.
	EscalatedAt   *time.Time `json:"escalatedAt,omitempty" doc:"When nobody answered the question in time and it was re-addressed to the workspace's Owners and Admins"`
	MayAnswer     *bool      `json:"mayAnswer,omitempty" doc:"For a question that still waits: whether the caller may answer it (see the pending action's mayAnswer)"`
	AnswerRefusal string     `json:"answerRefusal,omitempty" enum:"EscalatedToAdministrators,NotPermitted" doc:"Why the caller may not answer the question that still waits"`
	Read          bool       `json:"read"`
	ReadAt        *time.Time `json:"readAt,omitempty"`
	CreatedAt     time.Time  `json:"createdAt"`
}

// NotificationList is the caller's notifications, attention first, with the unread count.
type NotificationList struct {
	Items       []Notification `json:"items"`
	UnreadCount int            `json:"unreadCount"`
}

func notificationOf(n domain.Notification) Notification {
	out := Notification{ID: n.ID, Kind: n.Kind, Attention: n.Attention, Title: n.Title, TaskID: n.TaskID, InteractionID: n.InteractionID,
		PendingActionID: n.PendingActionID, Read: !n.ReadAt.IsZero(), CreatedAt: n.CreatedAt}
	if !n.ResolvedAt.IsZero() {
		at := n.ResolvedAt
		out.Resolved, out.Resolution, out.ResolvedAt = true, n.Resolution, &at
		// The stored title asked for an answer, or told that it went to the administrators; a
		// resolved one says what became of the question.
		for _, prefix := range []string{domain.QuestionWaiting, domain.EscalatedAwayPrefix} {
			if rest, ok := strings.CutPrefix(n.Title, prefix); ok {
				out.Title = resolvedTitles[n.Resolution] + rest
				break
			}
		}
	}
	if out.Read {
		at := n.ReadAt
		out.ReadAt = &at
	}
	return out
}

// resolvedTitles start the title of a question's notification once it is resolved.
var resolvedTitles = map[string]string{
	domain.ResolutionAnswered: "Question answered: ",
	domain.ResolutionExpired:  "Question expired: ",
	domain.ResolutionClosed:   "Question closed: ",
}

func (s *routes) registerNotifications() {
	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "list-notifications", Method: http.MethodGet, Path: "/api/workspaces/{workspace}/notifications", Tags: []string{tagNotifications},
		Summary:     "List the caller's notifications",
		Description: "Attention first: unread questions and failures, then the other unread ones, then the read ones; newest first in each. With the unread count.",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		WorkspacePath
		Take int `query:"take" minimum:"1" maximum:"100" default:"50"`
	}) (*struct{ Body NotificationList }, error) {
		rc, _ := httpapi.RequestContextFrom(ctx)
		list, unread, err := s.workplace.Notifications(ctx, rc.WorkspaceID, rc.PrincipalID, in.Take)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := NotificationList{Items: make([]Notification, 0, len(list)), UnreadCount: unread}
		for _, n := range list {
			out.Items = append(out.Items, notificationOf(n))
		}
		if err := s.withAnswerRights(ctx, out.Items); err != nil {
			return nil, err
		}
		return &struct{ Body NotificationList }{Body: out}, nil
	})

	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "read-notification", Method: http.MethodPost, Path: "/api/workspaces/{workspace}/notifications/{id}/read", Tags: []string{tagNotifications},
		Summary: "Mark one notification read", Description: "Marking it again changes nothing.",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		WorkspacePath
		ID string `path:"id" maxLength:"64"`
	}) (*struct{ Body Notification }, error) {
		rc, _ := httpapi.RequestContextFrom(ctx)
		n, err := s.workplace.MarkRead(ctx, rc.WorkspaceID, rc.PrincipalID, in.ID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := []Notification{notificationOf(n)}
		if err := s.withAnswerRights(ctx, out); err != nil {
			return nil, err
		}
		return &struct{ Body Notification }{Body: out[0]}, nil
	})

	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "read-all-notifications", Method: http.MethodPost, Path: "/api/workspaces/{workspace}/notifications/read-all", Tags: []string{tagNotifications},
		Summary: "Mark all the caller's notifications read",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *WorkspacePath) (*struct {
		Body struct {
			Marked      int64 `json:"marked" doc:"How many were unread"`
			UnreadCount int   `json:"unreadCount"`
		}
	}, error) {
		rc, _ := httpapi.RequestContextFrom(ctx)
		marked, err := s.workplace.MarkAllRead(ctx, rc.WorkspaceID, rc.PrincipalID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := &struct {
			Body struct {
				Marked      int64 `json:"marked" doc:"How many were unread"`
				UnreadCount int   `json:"unreadCount"`
			}
		}{}
		out.Body.Marked = marked
		// The count after the change, for the badge to agree with the list at once.
		if out.Body.UnreadCount, err = s.workplace.UnreadCount(ctx, rc.WorkspaceID, rc.PrincipalID); err != nil {
			return nil, httpapi.Problem(err)
		}
		return out, nil
	})
}

// withAnswerRights says on each notification of a question that still waits whether it was
// escalated and whether the caller may answer it, in one read of the questions.
func (s *routes) withAnswerRights(ctx context.Context, items []Notification) error {
	rc, _ := httpapi.RequestContextFrom(ctx)
	var ids []string
	for _, n := range items {
		if n.PendingActionID != "" && !n.Resolved {
			ids = append(ids, n.PendingActionID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	escalated, err := s.workplace.QuestionEscalations(ctx, rc.WorkspaceID, ids...)
	if err != nil {
		return httpapi.Problem(err)
	}
	var (
		questions []*InteractionPendingAction
		of        []int
	)
	for i, n := range items {
		if n.PendingActionID == "" || n.Resolved {
			continue
		}
		q := &InteractionPendingAction{Status: work.ActionCreated}
		if at, ok := escalated[n.PendingActionID]; ok {
			q.EscalatedAt = &at
			items[i].EscalatedAt = &at
		}
		questions, of = append(questions, q), append(of, i)
	}
	if err := s.answerable(ctx, questions...); err != nil {
		return err
	}
	for j, q := range questions {
		may, n := q.MayAnswer, &items[of[j]]
		n.MayAnswer, n.AnswerRefusal = &may, q.AnswerRefusal
		if !may && n.EscalatedAt != nil {
			// The escalation told its reader's notifications so (the projection); one that still
			// asks, such as an Admin's who is no longer one, is news to this reader all the same.
			n.Attention, n.Title = false, domain.EscalatedAwayTitle(n.Title)
		}
	}
	return nil
}
