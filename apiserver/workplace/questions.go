package workplace

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"

	"platform.dev/platform/apiserver/work"
)

// Question is an open pending action as the Workplace shows it wherever it can be answered: in
// its conversation, in its Task and in the inbox. It never holds the resume token or its hash.
type Question struct {
	ID            string
	Kind          string
	Prompt        string
	Options       []work.Option
	ExpiresAt     time.Time
	CreatedAt     time.Time
	TaskID        string
	InteractionID string
	// Title is its Task's title, else its conversation's.
	Title string
	// OnExpiry is its fallback, EscalatedAt when it was re-addressed to the workspace's Owners
	// and Admins, Call the exact tool call an approval decides.
	OnExpiry    string
	EscalatedAt time.Time
	Call        *work.ApprovalCall
	// Budget is the budget an approval to continue past one is about.
	Budget *work.BudgetCrossing
}

const questionColumns = `p.id, p.kind, p.prompt, p.options, p.expires_at, p.created_at, p.task_id, COALESCE(p.interaction_id, ''),
	COALESCE(t.title, i.title, ''), p.on_expiry, p.escalated_at, p.tool_call, p.budget`

const questionFrom = ` FROM pending_actions p LEFT JOIN work_tasks t ON t.id = p.task_id LEFT JOIN interactions i ON i.id = p.interaction_id`

func scanQuestion(row scanner) (Question, error) {
	var (
		q                                 Question
		options, call, budget             sql.NullString
		expiresAt, createdAt, escalatedAt int64
	)
	err := row.Scan(&q.ID, &q.Kind, &q.Prompt, &options, &expiresAt, &createdAt, &q.TaskID, &q.InteractionID, &q.Title,
		&q.OnExpiry, &escalatedAt, &call, &budget)
	if options.Valid {
		_ = json.Unmarshal([]byte(options.String), &q.Options)
	}
	if call.Valid {
		q.Call = &work.ApprovalCall{}
		if json.Unmarshal([]byte(call.String), q.Call) != nil {
			q.Call = nil
		}
	}
	if budget.Valid {
		q.Budget = &work.BudgetCrossing{}
		if json.Unmarshal([]byte(budget.String), q.Budget) != nil {
			q.Budget = nil
		}
	}
	q.ExpiresAt, q.CreatedAt, q.EscalatedAt = fromMS(expiresAt), fromMS(createdAt), fromMS(escalatedAt)
	return q, err
}

func (s *Store) questions(ctx context.Context, where string, args ...any) ([]Question, error) {
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT `+questionColumns+questionFrom+` WHERE `+where), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Question
	for rows.Next() {
		q, err := scanQuestion(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// OpenQuestionsOf are the open, unexpired questions of the workspace's Tasks taskIDs, by Task,
// oldest first.
func (s *Store) OpenQuestionsOf(ctx context.Context, workspaceID string, taskIDs ...string) (map[string][]Question, error) {
	out := map[string][]Question{}
	if len(taskIDs) == 0 {
		return out, nil
	}
	args := []any{workspaceID, work.ActionCreated, ms(s.now())}
	for _, id := range taskIDs {
		args = append(args, id)
	}
	list, err := s.questions(ctx, `p.workspace_id = ? AND p.status = ? AND p.expires_at > ? AND p.task_id IN (?`+
		strings.Repeat(", ?", len(taskIDs)-1)+`) ORDER BY p.created_at, p.id`, args...)
	if err != nil {
		return nil, err
	}
	for _, q := range list {
		out[q.TaskID] = append(out[q.TaskID], q)
	}
	return out, nil
}

// QuestionCursor is where a page of the inbox starts: after the question created at CreatedAt
// with id ID.
type QuestionCursor struct {
	CreatedAt time.Time
	ID        string
}

// Which open questions OpenQuestions lists, by whether they were escalated to the workspace's
// Owners and Admins: all of them, only those still addressed to everyone who may run work, or only
// the escalated ones. What a caller may answer is one of these, depending on the caller's role.
type QuestionScope int

const (
	QuestionsAll QuestionScope = iota
	QuestionsNotEscalated
	QuestionsEscalated
)

// QuestionCounts are how many questions are open in a workspace, and how many of them were
// escalated to its Owners and Admins, counted among at most MaxQuestionCount open ones.
type QuestionCounts struct {
	Open, Escalated int
}

// MaxQuestionCount bounds a count of open questions: the count reads at most this many rows of the
// workspace's open questions (through its index), whatever piles up.
const MaxQuestionCount = 10000

// OpenQuestionCounts counts the workspace's open, unexpired questions, and the escalated ones among
// them, in one statement that reads at most MaxQuestionCount of them through the workspace's index
// of open questions.
func (s *Store) OpenQuestionCounts(ctx context.Context, workspaceID string) (QuestionCounts, error) {
	var c QuestionCounts
	err := s.db.DB().QueryRowContext(ctx, s.q(`SELECT COUNT(*), COALESCE(SUM(CASE WHEN c.escalated_at > 0 THEN 1 ELSE 0 END), 0)
		FROM (SELECT p.escalated_at FROM pending_actions p WHERE p.workspace_id = ? AND p.status = ? AND p.expires_at > ? LIMIT ?) c`),
		workspaceID, work.ActionCreated, ms(s.now()), MaxQuestionCount).Scan(&c.Open, &c.Escalated)
	return c, err
}

// OpenQuestions lists the workspace's open, unexpired questions, of conversations and of
// autonomous Tasks, oldest first, at most take, after the cursor when it is set, and only those
// which says (QuestionsAll, QuestionsNotEscalated, QuestionsEscalated).
func (s *Store) OpenQuestions(ctx context.Context, workspaceID string, after QuestionCursor, take int, which QuestionScope) ([]Question, error) {
	where := `p.workspace_id = ? AND p.status = ? AND p.expires_at > ?`
	args := []any{workspaceID, work.ActionCreated, ms(s.now())}
	switch which {
	case QuestionsNotEscalated:
		where += ` AND p.escalated_at = 0`
	case QuestionsEscalated:
		where += ` AND p.escalated_at > 0`
	}
	if after.ID != "" {
		where += ` AND (p.created_at > ? OR (p.created_at = ? AND p.id > ?))`
		args = append(args, ms(after.CreatedAt), ms(after.CreatedAt), after.ID)
	}
	return s.questions(ctx, where+` ORDER BY p.created_at, p.id LIMIT ?`, append(args, take)...)
}

// QuestionStatuses says where the workspace's pending actions ids stand: created, completed,
// expired (also an open one past its expiry) or cancelled.
func (s *Store) QuestionStatuses(ctx context.Context, workspaceID string, ids ...string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	args := []any{workspaceID}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT id, status, expires_at FROM pending_actions WHERE workspace_id = ? AND id IN (?`+
		strings.Repeat(", ?", len(ids)-1)+`)`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	now := s.now()
	for rows.Next() {
		var (
			id, status string
			expiresAt  int64
		)
		if err := rows.Scan(&id, &status, &expiresAt); err != nil {
			return nil, err
		}
		if status == work.ActionCreated && !now.Before(fromMS(expiresAt)) {
			status = work.ActionExpired
		}
		out[id] = status
	}
	return out, rows.Err()
}

// QuestionEscalations are when the workspace's open pending actions ids were escalated to its
// Owners and Admins, for those that were.
func (s *Store) QuestionEscalations(ctx context.Context, workspaceID string, ids ...string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if len(ids) == 0 {
		return out, nil
	}
	args := []any{workspaceID, work.ActionCreated}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.db.DB().QueryContext(ctx, s.q(`SELECT id, escalated_at FROM pending_actions WHERE workspace_id = ? AND status = ?
		AND escalated_at > 0 AND id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id string
			at int64
		)
		if err := rows.Scan(&id, &at); err != nil {
			return nil, err
		}
		out[id] = fromMS(at)
	}
	return out, rows.Err()
}
