package workplace

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/work"
	domain "platform.dev/platform/apiserver/workplace"
)

// OpenQuestion is a question waiting for an answer, as the inbox lists it: answerable in place,
// in its conversation (interactionId) or, for an autonomous Task, in the Task (taskId). Never its
// resume token or hash.
type OpenQuestion struct {
	InteractionPendingAction
	TaskID        string    `json:"taskId,omitempty" doc:"Its Task"`
	InteractionID string    `json:"interactionId,omitempty" doc:"Its conversation; absent for an autonomous Task's question"`
	Title         string    `json:"title" doc:"Its Task's title, else its conversation's"`
	CreatedAt     time.Time `json:"createdAt"`
}

// OpenQuestionList is a page of the inbox.
type OpenQuestionList struct {
	Items []OpenQuestion `json:"items"`
	// OpenCount is how many questions are open in the workspace, on every page; MayAnswerCount how
	// many of them the caller may answer (what "Needs you" counts).
	OpenCount      int    `json:"openCount" doc:"How many questions are open in the workspace in all (counted up to 10000)"`
	MayAnswerCount int    `json:"mayAnswerCount" doc:"How many of the open questions the caller may answer: all of them for an Owner or Admin of the workspace or of its tenant and a Platform administrator, those not escalated for anyone else who may run work, none for a caller who may only read it"`
	Next           string `json:"next,omitempty" doc:"The cursor of the next page (pass it as after), when there is one"`
}

// ResumeTokenGrant is a fresh single-use resume token for an open question: returned only here.
type ResumeTokenGrant struct {
	ResumeToken   string                   `json:"resumeToken" doc:"Single-use: answers this pending action; the token given before no longer does"`
	PendingAction InteractionPendingAction `json:"pendingAction"`
}

func questionOf(q domain.Question) InteractionPendingAction {
	return InteractionPendingAction{ID: q.ID, Kind: q.Kind, Prompt: q.Prompt, Options: q.Options, Status: work.ActionCreated, ExpiresAt: q.ExpiresAt,
		OnExpiry: q.OnExpiry, EscalatedAt: escalatedAt(q.EscalatedAt), Call: q.Call, Budget: q.Budget}
}

// cursorOf and parseCursor spell an inbox cursor: the creation time (Unix milliseconds) and id of
// the last question of a page.
func cursorOf(q domain.Question) string {
	return strconv.FormatInt(q.CreatedAt.UnixMilli(), 10) + "." + q.ID
}

func parseCursor(s string) (domain.QuestionCursor, bool) {
	at, id, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" || n < 0 {
		return domain.QuestionCursor{}, false
	}
	return domain.QuestionCursor{CreatedAt: time.UnixMilli(n).UTC(), ID: id}, true
}

func (s *routes) registerQuestions() {
	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "list-pending-actions", Method: http.MethodGet, Path: "/api/workspaces/{workspace}/pending-actions",
		Tags: []string{tagInteractions}, Summary: "List the workspace's open questions (the inbox)",
		Description: "Every question that waits for an answer in the workspace, of conversations and of autonomous Tasks, " +
			"oldest first, a page at a time (pass next as after). Expired and answered ones are not listed. mayAnswer=true lists " +
			"only those the caller may answer now, mayAnswer=false only the others (a question escalated to the workspace's " +
			"Owners and Admins, to anyone else; every question, to a caller who may only read work); mayAnswerCount counts the " +
			"first. A conversation's question is answered with its resume token (ask for a fresh one with .../resume-token when " +
			"this page has none); an autonomous Task's on the Task.",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		WorkspacePath
		State     string `query:"state" enum:"open" default:"open" doc:"Only open questions are listed"`
		MayAnswer string `query:"mayAnswer" enum:"true,false" doc:"true: only the questions the caller may answer now; false: only those the caller may not (absent: all)"`
		After     string `query:"after" maxLength:"100" doc:"The next cursor of the previous page"`
		Take      int    `query:"take" minimum:"1" maximum:"100" default:"50"`
	}) (*struct{ Body OpenQuestionList }, error) {
		var after domain.QuestionCursor
		if in.After != "" {
			var ok bool
			if after, ok = parseCursor(in.After); !ok {
				return nil, huma.Error422UnprocessableEntity("the query is invalid", &huma.ErrorDetail{Location: "query.after",
					Message: "the next cursor of a previous page"})
			}
		}
		rc, _ := httpapi.RequestContextFrom(ctx)
		counts, err := s.workplace.OpenQuestionCounts(ctx, rc.WorkspaceID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		// Who may answer what: one who may not run work answers none; anyone else those not
		// escalated, and the escalated ones too when an Owner or Admin (read only when any is,
		// and once: the questions listed below are told by the same reading).
		rights := s.rightsOf(ctx)
		execute := rights.execute()
		escalated := false
		if execute && counts.Escalated > 0 {
			if escalated, err = rights.mayAnswerEscalated(ctx, s); err != nil {
				return nil, httpapi.Problem(err)
			}
		}
		out := OpenQuestionList{Items: []OpenQuestion{}, OpenCount: counts.Open}
		if execute {
			out.MayAnswerCount = counts.Open
			if !escalated {
				out.MayAnswerCount -= counts.Escalated
			}
		}
		which, none := domain.QuestionsAll, false
		switch in.MayAnswer {
		case "true":
			none = !execute || out.MayAnswerCount == 0
			if !escalated {
				which = domain.QuestionsNotEscalated
			}
		case "false":
			none = execute && out.MayAnswerCount == counts.Open
			if execute {
				which = domain.QuestionsEscalated
			}
		}
		if none {
			return &struct{ Body OpenQuestionList }{Body: out}, nil
		}
		list, err := s.workplace.OpenQuestions(ctx, rc.WorkspaceID, after, in.Take+1, which)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		if len(list) > in.Take {
			list = list[:in.Take]
			out.Next = cursorOf(list[len(list)-1])
		}
		out.Items = make([]OpenQuestion, 0, len(list))
		for _, q := range list {
			out.Items = append(out.Items, OpenQuestion{InteractionPendingAction: questionOf(q), TaskID: q.TaskID, InteractionID: q.InteractionID,
				Title: q.Title, CreatedAt: q.CreatedAt})
		}
		actions := make([]*InteractionPendingAction, 0, len(out.Items))
		for i := range out.Items {
			actions = append(actions, &out.Items[i].InteractionPendingAction)
		}
		if err := s.answerableBy(ctx, rights, actions...); err != nil {
			return nil, err
		}
		if in.MayAnswer != "" {
			// A question escalated between the count and the list is on the page it now belongs
			// to on the next read, not on this one.
			want := in.MayAnswer == "true"
			out.Items = slices.DeleteFunc(out.Items, func(q OpenQuestion) bool { return q.MayAnswer != want })
		}
		return &struct{ Body OpenQuestionList }{Body: out}, nil
	})

	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "reissue-interaction-resume-token", Method: http.MethodPost,
		Path: "/api/workspaces/{workspace}/interactions/{id}/pending-actions/{actionId}/resume-token",
		Tags: []string{tagInteractions}, Summary: "Get a fresh resume token for an open question of the conversation",
		Description: "For a page that did not receive the question's token (a reload, another tab or device, a " +
			"notification, the inbox). The question's stored hash is replaced in one guarded update, so the token given " +
			"before stops answering it; the new token is returned only in this answer, single-use. Each reissue is recorded " +
			"in the security audit (who, which question, when; never the token). An expired or answered question is 409; an " +
			"escalated one 403 (code EscalatedToAdministrators) to anyone but the workspace's Owners and Admins; " +
			"more than " + strconv.Itoa(work.MaxReissuesPerMinute) + " reissues of one question in a minute 429.",
		Errors: []int{http.StatusForbidden, http.StatusConflict, http.StatusTooManyRequests},
	}, httpapi.PolicyRunsExecute), func(ctx context.Context, in *struct {
		InteractionPath
		ActionID string `path:"actionId" maxLength:"64" doc:"Pending action id"`
	}) (*struct {
		CacheControl string `header:"Cache-Control"`
		Body         ResumeTokenGrant
	}, error) {
		rc, _ := httpapi.RequestContextFrom(ctx)
		_, runID, err := s.interactionQuestion(ctx, rc.WorkspaceID, in.ID, in.ActionID)
		if err != nil {
			return nil, err
		}
		audit := &identity.Audit{Store: s.Work().SQL()}
		action, token, err := s.Work().ReissueResumeToken(ctx, work.Reissue{WorkspaceID: rc.WorkspaceID, RunID: runID, ActionID: in.ActionID,
			Record: func(tx *sql.Tx) error {
				return audit.Record(ctx, tx, identity.Event{Action: identity.ActionResumeTokenReissued, Outcome: identity.OutcomeSuccess,
					ActorID: rc.PrincipalID, TargetID: in.ActionID, TenantID: rc.TenantID, WorkspaceID: rc.WorkspaceID})
			},
			MayAnswerEscalated: s.EscalationCheck(rc.PrincipalID, rc.WorkspaceID)})
		if errors.Is(err, work.ErrTooManyReissues) {
			return nil, huma.Error429TooManyRequests(fmt.Sprintf("this question was given %d fresh tokens in the last minute; try again in a minute",
				work.MaxReissuesPerMinute))
		}
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		pending := pendingActionOf(&action)
		if err := s.answerable(ctx, pending); err != nil {
			return nil, err
		}
		return &struct {
			CacheControl string `header:"Cache-Control"`
			Body         ResumeTokenGrant
		}{CacheControl: "no-store", Body: ResumeTokenGrant{ResumeToken: token, PendingAction: *pending}}, nil
	})
}

// withUsage adds to Tasks the usage of their runs' model calls, in one read.
func (s *routes) withUsage(ctx context.Context, tasks ...*Task) error {
	rc, _ := httpapi.RequestContextFrom(ctx)
	ids := make([]string, 0, len(tasks))
	for _, t := range tasks {
		ids = append(ids, t.ID)
	}
	used, err := s.Work().TasksUsage(ctx, rc.WorkspaceID, ids...)
	if err != nil {
		return httpapi.Problem(err)
	}
	for _, t := range tasks {
		t.Usage = used[t.ID]
		if t.Usage == nil {
			t.Usage = &work.ModelUsage{}
		}
	}
	return nil
}

// withQuestions adds to Tasks the questions they wait on, in one read.
func (s *routes) withQuestions(ctx context.Context, tasks ...*Task) error {
	rc, _ := httpapi.RequestContextFrom(ctx)
	var ids []string
	for _, t := range tasks {
		if t.State == "action-required" || t.State == "paused" {
			ids = append(ids, t.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	open, err := s.workplace.OpenQuestionsOf(ctx, rc.WorkspaceID, ids...)
	if err != nil {
		return httpapi.Problem(err)
	}
	var actions []*InteractionPendingAction
	for _, t := range tasks {
		for _, q := range open[t.ID] {
			t.PendingActions = append(t.PendingActions, questionOf(q))
		}
		for i := range t.PendingActions {
			actions = append(actions, &t.PendingActions[i])
		}
	}
	return s.answerable(ctx, actions...)
}
