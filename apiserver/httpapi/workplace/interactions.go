package workplace

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/work"
	domain "platform.dev/platform/apiserver/workplace"
	"platform.dev/platform/internal/mediatype"
	"platform.dev/platform/internal/publication"
	"platform.dev/platform/internal/resourcenamespace"
)

// maxAnswerBytes bounds the body of an answer: a file of MaxArtifactBytes in Base64, and the rest.
const maxAnswerBytes = domain.MaxArtifactBytes/3*4 + 64<<10

// maxWaitSeconds bounds how long a request waits for its run to settle before it answers.
const maxWaitSeconds = 30

// Interaction is a durable conversation, as the Workplace reads it. It never carries a resume
// token or its hash, a run id of a provider, or the Entry's binding.
type Interaction struct {
	ID      string   `json:"id"`
	Entry   EntryRef `json:"entry" doc:"The Entry the conversation was opened from"`
	Title   string   `json:"title"`
	State   string   `json:"state" enum:"Active,Idle,Closed" doc:"Active while work is in progress or waits for an answer, Idle once it ended (a completed Task leaves its conversation Idle, open for follow-ups), Closed when an Entry cleanup closed it"`
	TaskID  string   `json:"taskId,omitempty" doc:"The public Task of the conversation, when its reference appears in it"`
	Blocked bool     `json:"blocked" doc:"True while a question waits for an answer: the composer is disabled until it is answered"`
	// FollowUpPolicy lets the composer say what sending now does.
	FollowUpPolicy string    `json:"followUpPolicy" enum:"Enqueue,Reject,Interrupt" doc:"What a follow-up does while work is in progress, as the Entry declared it when the conversation opened: Enqueue waits for the work to end, Reject refuses it (409, code FollowUpRejected), Interrupt cancels the work and starts the new request"`
	Version        int64     `json:"version"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

// EntryRef names an Entry of the workspace.
type EntryRef struct {
	Namespace string `json:"namespace" doc:"Resource namespace: default, or a Pack's publisher.name"`
	Name      string `json:"name"`
}

// InteractionMessage is one functional message of a conversation.
type InteractionMessage struct {
	ID        string    `json:"id"`
	Seq       int64     `json:"seq" doc:"Position in the conversation, from 1"`
	Role      string    `json:"role" enum:"User,Platform,System" doc:"A functional label, never an identity"`
	Kind      string    `json:"kind" enum:"text,answer,reply,question,error,cancelled,result"`
	Text      string    `json:"text"`
	Question  *Question `json:"question,omitempty" doc:"For a question: the pending action it asks"`
	Pending   bool      `json:"pending,omitempty" doc:"A follow-up waiting for the work in progress to end before its run starts"`
	CreatedAt time.Time `json:"createdAt"`
}

// Question is the pending action a question message asks.
type Question struct {
	PendingActionID string        `json:"pendingActionId"`
	Kind            string        `json:"kind" enum:"text,choice,confirmation,file,approval"`
	Options         []work.Option `json:"options,omitempty"`
	// Status lets a page show an answered or expired question as such before anyone clicks.
	Status string `json:"status,omitempty" enum:"created,completed,expired,cancelled" doc:"Where the question stands now (an open question past its expiry reads expired)"`
}

// InteractionAction is the functional action of the conversation's latest run: what the Workplace shows.
type InteractionAction struct {
	Type          string                    `json:"type" enum:"respond,requestInput,requestConfirmation,requestChoice,createTask,showResult,showError,working" doc:"working while the run has not settled yet: updates follow (real-time hub, or a read of the Interaction)"`
	Text          string                    `json:"text,omitempty"`
	PendingAction *InteractionPendingAction `json:"pendingAction,omitempty" doc:"The question to answer, for the request actions"`
}

// InteractionPendingAction is a question a run waits on. Its resume token is never part of it.
type InteractionPendingAction struct {
	ID        string        `json:"id"`
	Kind      string        `json:"kind" enum:"text,choice,confirmation,file,approval"`
	Prompt    string        `json:"prompt"`
	Options   []work.Option `json:"options,omitempty"`
	Status    string        `json:"status" enum:"created,completed,expired,cancelled"`
	ExpiresAt time.Time     `json:"expiresAt"`
	// OnExpiry and EscalatedAt say what happens when nobody answers in time, and whether that
	// already re-addressed the question to the workspace's Owners and Admins.
	OnExpiry    string     `json:"onExpiry,omitempty" enum:"fail,reject,proceed,escalate" doc:"What the question turns into when nobody answers before expiresAt"`
	EscalatedAt *time.Time `json:"escalatedAt,omitempty" doc:"When nobody answered in time and the question was re-addressed to the workspace's Owners and Admins"`
	Resolution  string     `json:"resolution,omitempty" enum:"answered,failed,rejected,proceeded" doc:"How the question ended: answered by a person, or expired into its fallback"`
	// Call is the exact call an approval decides.
	Call *work.ApprovalCall `json:"call,omitempty" doc:"The exact tool call an approval decides: agent, tool, provider, the complete arguments and the sha256 digest of that call; once approved, only that call runs"`
	// Budget is the budget an approval to continue past one is about.
	Budget *work.BudgetCrossing `json:"budget,omitempty" doc:"The budget an approval to continue past it is about: scope, name, period, limit and what the period used; approved, the run goes on past it for the rest of the period"`
	// MayAnswer lets a page offer the answer only to who may give it, instead of a form that
	// ends in 403.
	MayAnswer     bool   `json:"mayAnswer" doc:"Whether the caller may answer this question now: false once it ended, for a caller who may not run work, and for an escalated question unless the caller is an Owner or Admin of the workspace or of its tenant, or a Platform administrator"`
	AnswerRefusal string `json:"answerRefusal,omitempty" enum:"EscalatedToAdministrators,NotPermitted" doc:"Why an open question is not the caller's to answer: EscalatedToAdministrators (nobody answered in time and it now waits for the workspace's Owners and Admins), NotPermitted (the caller may read work but not run it)"`
}

// Why an open question is not the caller's to answer (answerRefusal).
const (
	refusedEscalated    = httpapi.EscalatedCode
	refusedNotPermitted = "NotPermitted"
)

// answerRights is what answerable needs to know of the request's caller: whether it may run
// work, and whether it is an Owner or Admin of the workspace, which is read at most once per
// request and only when a question it looks at is escalated.
type answerRights struct {
	rc    httpapi.RequestContext
	admin *bool
}

func (s *routes) rightsOf(ctx context.Context) *answerRights {
	rc, _ := httpapi.RequestContextFrom(ctx)
	return &answerRights{rc: rc}
}

func (r *answerRights) execute() bool { return r.rc.Permissions.Has(identity.PermRunsExecute) }

// mayAnswerEscalated reads the caller's role the first time it is asked, and remembers it.
func (r *answerRights) mayAnswerEscalated(ctx context.Context, s *routes) (bool, error) {
	if r.admin == nil {
		ok, err := s.MayAnswerEscalated(ctx, r.rc)
		if err != nil {
			return false, err
		}
		r.admin = &ok
	}
	return *r.admin, nil
}

// answerable says, for each open question of actions, whether the request's caller may answer
// it: one who may not run work answers none; an escalated one is answered only by an Owner or
// Admin of the workspace. A question that ended is nobody's to answer.
func (s *routes) answerable(ctx context.Context, actions ...*InteractionPendingAction) error {
	return s.answerableBy(ctx, s.rightsOf(ctx), actions...)
}

// answerableBy is answerable with what the request already knows of its caller (rights), so that
// a handler that read the caller's role for its own purpose does not read it again.
func (s *routes) answerableBy(ctx context.Context, rights *answerRights, actions ...*InteractionPendingAction) error {
	execute := rights.execute()
	for _, a := range actions {
		a.MayAnswer, a.AnswerRefusal = false, ""
		switch {
		case a.Status != work.ActionCreated:
		case !execute:
			a.AnswerRefusal = refusedNotPermitted
		case a.EscalatedAt != nil:
			admin, err := rights.mayAnswerEscalated(ctx, s)
			if err != nil {
				return httpapi.Problem(err)
			}
			a.MayAnswer = admin
			if !admin {
				a.AnswerRefusal = refusedEscalated
			}
		default:
			a.MayAnswer = true
		}
	}
	return nil
}

// escalatedAt is t, or nil when it is zero.
func escalatedAt(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Exchange is the answer of the operations that move a conversation: the conversation, the
// action of its latest run, its Task when the reference appears, and the single-use resume
// token of the run's next pending action, returned only here.
type Exchange struct {
	Interaction Interaction               `json:"interaction"`
	Message     *InteractionMessage       `json:"message,omitempty" doc:"The message the request added"`
	Action      *InteractionAction        `json:"action,omitempty"`
	Task        *Task                     `json:"task,omitempty" doc:"The public Task, when its reference appears in the conversation"`
	Answered    *InteractionPendingAction `json:"answered,omitempty" doc:"The pending action the request answered"`
	ResumeToken string                    `json:"resumeToken,omitempty" doc:"Single-use: answers the run's next pending action; never readable again"`
}

type WorkspacePath struct {
	Workspace string `path:"workspace" maxLength:"128" doc:"Workspace id or route name"`
}

type InteractionPath struct {
	WorkspacePath
	ID string `path:"id" maxLength:"64" doc:"Interaction id"`
}

type WaitQuery struct {
	WaitSeconds int `query:"waitSeconds" minimum:"0" maximum:"30" default:"10" doc:"Wait up to this long for the run to ask, answer or end before answering"`
}

// OpenRequest opens a conversation from an Entry.
type OpenRequest struct {
	Input       map[string]json.RawMessage `json:"input,omitempty" doc:"The values of the Entry's fields by name; the PrimaryInput field carries the request"`
	Attachments []json.RawMessage          `json:"attachments,omitempty" doc:"Attachments: no published Entry accepts any yet"`
}

// FollowUpRejectedCode is the stable code of the 409 that refuses a follow-up under the Entry's
// Reject policy while work is in progress.
const FollowUpRejectedCode = "FollowUpRejected"

// FollowUpRequest is a follow-up message.
type FollowUpRequest struct {
	Text string `json:"text" doc:"The message" minLength:"1"`
}

// AnswerRequest answers a pending action of the conversation.
type AnswerRequest struct {
	ResumeToken string      `json:"resumeToken,omitempty" maxLength:"128" doc:"The single-use token returned with the question"`
	Value       *string     `json:"value,omitempty" doc:"The answer of a text action, or the value of a choice's option"`
	Confirmed   *bool       `json:"confirmed,omitempty" doc:"The answer of a confirmation"`
	Approved    *bool       `json:"approved,omitempty" doc:"The answer of an approval"`
	Reason      string      `json:"reason,omitempty" maxLength:"2048" doc:"Why an approval was given or refused"`
	File        *FileAnswer `json:"file,omitempty" doc:"The answer of a file action"`
}

// FileAnswer is a file a person sends in answer to a file action; its bytes go to the artifact
// store.
type FileAnswer struct {
	Name          string `json:"name" minLength:"1" maxLength:"255" doc:"A display name, no path"`
	MediaType     string `json:"mediaType" minLength:"1" maxLength:"255" doc:"Its media type: type/subtype with optional parameters, such as text/csv; anything else is refused with 400"`
	ContentBase64 string `json:"contentBase64" doc:"Its bytes, Base64-encoded (standard alphabet), at most 16 MiB decoded"`
}

type exchangeOutput struct {
	Body Exchange
}

func (s *routes) registerInteractions() {
	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "open-interaction", Method: http.MethodPost, Path: "/api/workspaces/{workspace}/entries/{entry}/interactions",
		Tags: []string{tagInteractions}, Summary: "Open an Interaction from an Entry", DefaultStatus: http.StatusCreated,
		Description: "Checks the input against the published Entry's fields (422 with the field path: an unknown field, a " +
			"missing required one, a value of the wrong type, a text too long, any attachment), checks again that its pinned " +
			"Flow version can run (409 otherwise), and in one transaction opens the durable conversation with the exact " +
			"submitted JSON, records the User message and starts the WorkItem and FlowRun on the pinned Flow version in the " +
			"Entry's workspace. The answer carries the action of the run once it settled (waitSeconds), the public Task when " +
			"its reference appears, and the single-use resume token of its first question.",
		Errors: []int{http.StatusConflict, http.StatusUnprocessableEntity},
	}, httpapi.PolicyRunsExecute), func(ctx context.Context, in *struct {
		WorkspacePath
		Entry     string `path:"entry" maxLength:"253" doc:"Name of the published Entry"`
		Namespace string `query:"namespace" maxLength:"127" doc:"Resource namespace of the Entry; default when omitted"`
		WaitQuery
		RawBody []byte
		Body    OpenRequest
	}) (*exchangeOutput, error) {
		return s.open(ctx, in.Entry, in.Namespace, in.RawBody, in.Body, in.WaitSeconds)
	})

	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "list-interactions", Method: http.MethodGet, Path: "/api/workspaces/{workspace}/interactions",
		Tags: []string{tagInteractions}, Summary: "List the caller's recent Interactions", Description: "Most recently active first.",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		WorkspacePath
		Take int `query:"take" minimum:"1" maximum:"100" default:"20" doc:"At most this many"`
	}) (*httpapi.ListOutput[Interaction], error) {
		rc, _ := httpapi.RequestContextFrom(ctx)
		list, err := s.workplace.Interactions(ctx, rc.WorkspaceID, rc.PrincipalID, in.Take)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := make([]Interaction, 0, len(list))
		for _, i := range list {
			view, err := s.interactionView(ctx, i, nil)
			if err != nil {
				return nil, err
			}
			out = append(out, view)
		}
		return httpapi.ItemsOutput(out), nil
	})

	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "get-interaction", Method: http.MethodGet, Path: "/api/workspaces/{workspace}/interactions/{id}",
		Tags: []string{tagInteractions}, Summary: "Read an Interaction",
		Description: "With the action of its latest run. Never a resume token: it was returned once, to the request that led to the question.",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *InteractionPath) (*exchangeOutput, error) {
		rc, _ := httpapi.RequestContextFrom(ctx)
		i, err := s.workplace.Interaction(ctx, rc.WorkspaceID, in.ID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return s.exchange(ctx, i, nil, "", nil)
	})

	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "list-interaction-messages", Method: http.MethodGet, Path: "/api/workspaces/{workspace}/interactions/{id}/messages",
		Tags: []string{tagInteractions}, Summary: "List the messages of an Interaction", Description: "Oldest first, after seq.",
	}, httpapi.PolicyRunsRead), func(ctx context.Context, in *struct {
		InteractionPath
		After int64 `query:"after" minimum:"0" doc:"Only the messages after this seq"`
		Take  int   `query:"take" minimum:"1" maximum:"200" default:"100" doc:"At most this many"`
	}) (*httpapi.ListOutput[InteractionMessage], error) {
		rc, _ := httpapi.RequestContextFrom(ctx)
		if _, err := s.workplace.Interaction(ctx, rc.WorkspaceID, in.ID); err != nil {
			return nil, httpapi.Problem(err)
		}
		messages, err := s.workplace.Messages(ctx, rc.WorkspaceID, in.ID, in.After, in.Take)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := httpapi.ListOf(messages, messageOf)
		var ids []string
		for _, m := range out.Body.Items {
			if m.Question != nil {
				ids = append(ids, m.Question.PendingActionID)
			}
		}
		statuses, err := s.workplace.QuestionStatuses(ctx, rc.WorkspaceID, ids...)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		for _, m := range out.Body.Items {
			if m.Question != nil {
				m.Question.Status = statuses[m.Question.PendingActionID]
			}
		}
		return out, nil
	})

	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "send-interaction-message", Method: http.MethodPost, Path: "/api/workspaces/{workspace}/interactions/{id}/messages",
		Tags: []string{tagInteractions}, Summary: "Send a follow-up message", DefaultStatus: http.StatusAccepted,
		Description: "Accepted asynchronously (202): a new FlowRun continues the conversation on the Entry's continuation target " +
			"(else its initial one), records the ended run as its parentFlowRunId, keeps the Interaction and the public Task, " +
			"and never reopens the earlier run. Its input holds the continuation context: recent messages and Result and " +
			"artifact references only. While the previous run still works, the Entry's follow-up policy decides " +
			"(interaction.followUpPolicy): Enqueue (the default) records the message (pending) and its run starts when that " +
			"one ends; Reject refuses it with 409 Problem Details whose code is FollowUpRejected, recording nothing; " +
			"Interrupt cancels that run as a person's cancel does and starts the new one at once. While a question waits " +
			"for an answer, the message is refused with 409 under every policy: answer it first.",
		Errors: []int{http.StatusConflict, http.StatusUnprocessableEntity},
	}, httpapi.PolicyRunsExecute), func(ctx context.Context, in *struct {
		InteractionPath
		WaitQuery
		Body FollowUpRequest
	}) (*exchangeOutput, error) {
		if errs := domain.CheckMessage(in.Body.Text, field.NewPath("text")); len(errs) > 0 {
			return nil, httpapi.FieldErrors(errs)
		}
		rc, _ := httpapi.RequestContextFrom(ctx)
		f, err := s.workplace.SendFollowUp(ctx, rc.WorkspaceID, rc.PrincipalID, in.ID, in.Body.Text)
		switch {
		case errors.Is(err, domain.ErrBlocked):
			return nil, huma.Error409Conflict("a question of the conversation waits for an answer; answer it before sending a message")
		case errors.Is(err, domain.ErrFollowUpRejected):
			return nil, httpapi.NewCodedProblem(http.StatusConflict, FollowUpRejectedCode,
				"the Entry's follow-up policy is Reject: the work in progress must end before this conversation takes another message; "+
					"send it again once the work ended, or cancel the Task", nil)
		case err != nil:
			return nil, httpapi.Problem(err)
		}
		s.wakeExecutor()
		i := f.Interaction
		if f.Run != nil {
			if i, _, err = s.settle(ctx, i, in.WaitSeconds, nil); err != nil {
				return nil, err
			}
		}
		msg := messageOf(f.Message)
		return s.exchange(ctx, i, &msg, f.Token, nil)
	})

	huma.Register(s.API(), s.operation(huma.Operation{
		OperationID: "answer-interaction-pending-action", Method: http.MethodPost,
		Path: "/api/workspaces/{workspace}/interactions/{id}/pending-actions/{actionId}/responses",
		Tags: []string{tagInteractions}, Summary: "Answer a pending action of the conversation",
		Description: "Workspace, Interaction, pending action and resume token must all match. The action completes " +
			"atomically and once: a wrong token or an answer that does not fit is 400, an expired or already answered action " +
			"409, another workspace's 404; an escalated question answered by anyone but the workspace's Owners and Admins (or a " +
			"Platform administrator) 403 with code EscalatedToAdministrators. The answer is recorded as a User message (a choice's label, yes or no, the text, " +
			"the file's name, approved or rejected with the reason); a file's bytes go to the artifact store, as an artifact " +
			"of the Task. The answer carries a fresh resume token for the run's next question.",
		Errors: []int{http.StatusBadRequest, http.StatusForbidden, http.StatusConflict},
		// A file answer carries up to 16 MiB, Base64-encoded.
		MaxBodyBytes: maxAnswerBytes,
	}, httpapi.PolicyRunsExecute), func(ctx context.Context, in *struct {
		InteractionPath
		ActionID string `path:"actionId" maxLength:"64" doc:"Pending action id"`
		WaitQuery
		Body AnswerRequest
	}) (*exchangeOutput, error) {
		rc, _ := httpapi.RequestContextFrom(ctx)
		i, runID, err := s.interactionQuestion(ctx, rc.WorkspaceID, in.ID, in.ActionID)
		if err != nil {
			return nil, err
		}
		answered, token, worker, err := s.answer(ctx, rc, runID, in.ActionID, in.Body, true, in.WaitSeconds)
		if err != nil {
			return nil, err
		}
		var run *work.FlowRun
		if in.WaitSeconds <= 0 || i.CurrentRunID == "" {
			// Nothing to wait for: the conversation as the answer left it.
			if i, err = s.workplace.Interaction(ctx, rc.WorkspaceID, i.ID); err != nil {
				return nil, httpapi.Problem(err)
			}
		} else if i, run, err = s.settle(ctx, i, in.WaitSeconds, worker); err != nil {
			return nil, err
		}
		out, err := s.exchange(ctx, i, nil, token, run)
		if err == nil {
			out.Body.Answered = pendingActionOf(&answered)
		}
		return out, err
	})
}

// open opens a conversation from the published Entry name of resource namespace rns of the
// request's workspace.
func (s *routes) open(ctx context.Context, name, rns string, raw []byte, body OpenRequest, wait int) (*exchangeOutput, error) {
	rc, _ := httpapi.RequestContextFrom(ctx)
	if rns == "" {
		rns = string(platformv1.DefaultResourceNamespace)
	}
	if len(body.Attachments) > 0 {
		return nil, httpapi.FieldErrors(field.ErrorList{field.Forbidden(field.NewPath("attachments"), "this Entry accepts no attachments")})
	}
	// The Entry, its Flows and their namespaces are read from the informers (what this process
	// wrote a moment ago from the kube API): not a kube API request each per conversation.
	ns, err := resourcenamespace.Resolve(ctx, s.Reads(), rc.Namespace, platformv1.ResourceNamespace(rns))
	if errors.Is(err, resourcenamespace.ErrNotFound) {
		return nil, huma.Error404NotFound(fmt.Sprintf("entry %q not found", name))
	}
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	published := &platformv1.PublishedEntry{}
	if err := s.Reads().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, published); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, huma.Error404NotFound(fmt.Sprintf("entry %q is not published in the workspace", name))
		}
		return nil, httpapi.Problem(err)
	}
	def := &published.Definition
	submission, errs := domain.CheckSubmission(&def.EntryPresentation, body.Input)
	if len(errs) > 0 {
		return nil, httpapi.FieldErrors(errs)
	}
	target, err := s.executable(ctx, ns, def.ResolvedTarget)
	if err != nil {
		return nil, err
	}
	continuation := target
	if def.ContinuationTarget != nil {
		if continuation, err = s.executable(ctx, ns, *def.ContinuationTarget); err != nil {
			return nil, err
		}
	}
	opening := domain.Opening{
		Context:        work.Context{TenantID: rc.TenantID, WorkspaceID: rc.WorkspaceID, Namespace: rc.Namespace, PrincipalID: rc.PrincipalID},
		EntryNamespace: rns, EntryName: name, EntryGeneration: def.EntryGeneration, Title: entryTitle(def, name),
		TaskDisplay: string(def.Task.Display), Participants: string(def.Participants.Visibility), ResultsDisplay: string(def.Results.Display),
		FollowUpPolicy: string(def.FollowUps.Policy),
		Target:         target, Continuation: continuation, Submitted: raw, Submission: submission,
		// Waited for, the conversation is read once its run settled, not also now.
		Unread: wait > 0,
	}
	// A worker of this process, when one is free, runs the first run at once and writes the
	// conversation with it (it gives itself back, or hands the run to any worker, when it
	// cannot).
	reserved, _ := s.Reserve(ctx, rc.WorkspaceID, wait)
	if reserved != nil {
		opening.Submit = reserved.Submit
	}
	i, submitted, err := s.workplace.Open(ctx, opening)
	var worker *started
	switch {
	case reserved != nil && submitted.Run.ID != "":
		worker = startedRun(submitted.Run, submitted.Settled)
	case reserved == nil && submitted.Run.ID != "":
		s.wakeExecutor() // the conversation and its run were committed; only reading it back may have failed
	}
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	token := submitted.Token
	var settled *work.FlowRun
	if i, settled, err = s.settle(ctx, i, wait, worker); err != nil {
		return nil, err
	}
	out, err := s.exchange(ctx, i, nil, token, settled)
	if err == nil {
		out.Body.Message = nil
	}
	return out, err
}

func entryTitle(def *platformv1.PublishedEntryDefinition, name string) string {
	if def.DisplayName != "" {
		return def.DisplayName
	}
	return name
}

// executable rechecks, at submission, that a pinned Flow version can run now: the version is
// published and Ready, its Flow exists and is enabled. A conversation never starts on what
// cannot run (409 with the stable reason).
func (s *routes) executable(ctx context.Context, from string, ref platformv1.FlowVersionReference) (domain.FlowTarget, error) {
	refused := func(reason, detail string) (domain.FlowTarget, error) {
		return domain.FlowTarget{}, huma.Error409Conflict(fmt.Sprintf("the Entry cannot start now (%s): %s", reason, detail))
	}
	ns, err := resourcenamespace.Resolve(ctx, s.Reads(), from, ref.Namespace)
	if errors.Is(err, resourcenamespace.ErrNotFound) {
		return refused(platformv1.FlowNotFoundReason, "the resource namespace of its Flow is gone")
	}
	if err != nil {
		return domain.FlowTarget{}, httpapi.Problem(err)
	}
	flow := &platformv1.Flow{}
	if err := s.Reads().Get(ctx, client.ObjectKey{Namespace: ns, Name: string(ref.Name)}, flow); err != nil {
		if apierrors.IsNotFound(err) {
			return refused(platformv1.FlowNotFoundReason, fmt.Sprintf("Flow %q does not exist", ref.Name))
		}
		return domain.FlowTarget{}, httpapi.Problem(err)
	}
	if flow.Definition.Enabled != nil && !*flow.Definition.Enabled {
		return refused(platformv1.FlowDisabledReason, fmt.Sprintf("Flow %q is disabled", ref.Name))
	}
	version, err := publication.GetFlowVersion(ctx, s.Reads(), ns, string(ref.Name), ref.Version)
	if err != nil {
		return domain.FlowTarget{}, httpapi.Problem(err)
	}
	if version == nil {
		return refused(platformv1.FlowVersionNotFoundReason, fmt.Sprintf("version %s of Flow %q is not published", ref.Version, ref.Name))
	}
	if ready := meta.FindStatusCondition(version.Status.Conditions, platformv1.ReadyCondition); ready != nil && ready.Status != "True" {
		return refused(ready.Reason, ready.Message)
	}
	return domain.FlowTarget{Namespace: ns, Flow: string(ref.Name), Version: string(ref.Version)}, nil
}

// answer completes a pending action of run runID with the request's answer. A file's bytes are
// stored first and recorded as an artifact of the Task with the answer; a refused answer removes
// them again.
func (s *routes) answer(ctx context.Context, rc httpapi.RequestContext, runID, actionID string, body AnswerRequest, needToken bool, wait int) (work.PendingAction, string, *started, error) {
	ans := work.Answer{Value: body.Value, Confirmed: body.Confirmed, Approved: body.Approved, Reason: body.Reason}
	if needToken && body.ResumeToken == "" {
		return work.PendingAction{}, "", nil, huma.Error400BadRequest("the answer needs the resume token returned with the question",
			&huma.ErrorDetail{Location: "body.resumeToken", Message: "required"})
	}
	var artifact *domain.Artifact
	if f := body.File; f != nil {
		// The media type is served back as the artifact's Content-Type: only a real one is kept.
		// The value is not repeated: Problem Details never echo submitted values.
		if !mediatype.Valid(f.MediaType) {
			return work.PendingAction{}, "", nil, huma.Error400BadRequest("the file's media type is not a media type",
				&huma.ErrorDetail{Location: "body.file.mediaType", Message: "type/subtype with optional parameters, such as text/csv, without control characters"})
		}
		data, err := base64.StdEncoding.DecodeString(f.ContentBase64)
		if err != nil {
			return work.PendingAction{}, "", nil, huma.Error400BadRequest("the file is not Base64", &huma.ErrorDetail{Location: "body.file.contentBase64", Message: "standard Base64"})
		}
		if strings.ContainsAny(f.Name, "/\\\x00") {
			return work.PendingAction{}, "", nil, huma.Error400BadRequest("the file name is a display name", &huma.ErrorDetail{Location: "body.file.name", Message: "no path separators"})
		}
		run, err := s.Work().Run(ctx, rc.WorkspaceID, runID)
		if err != nil {
			return work.PendingAction{}, "", nil, httpapi.Problem(err)
		}
		stored, err := s.workplace.StoreArtifact(ctx, run.WorkTaskID, rc.WorkspaceID, f.Name, f.MediaType, data)
		if err != nil {
			return work.PendingAction{}, "", nil, httpapi.Problem(err)
		}
		artifact = &stored
		ans.File = &work.FileAnswer{Name: f.Name, MediaType: f.MediaType, Length: stored.Length, ArtifactID: stored.ID}
	}
	// A worker of this process, when one is free, gets the resumed run with the answer.
	answered, err := s.Respond(ctx, work.Response{WorkspaceID: rc.WorkspaceID, RunID: runID, ActionID: actionID,
		Token: body.ResumeToken, SkipToken: !needToken, PrincipalID: rc.PrincipalID, Answer: ans,
		MayAnswerEscalated: s.EscalationCheck(rc.PrincipalID, rc.WorkspaceID)}, wait)
	action, token := answered.Action, answered.Token
	worker := startedRun(answered.Run, answered.Settled)
	if err != nil {
		if artifact != nil {
			_ = s.workplace.DeleteArtifact(context.WithoutCancel(ctx), *artifact)
		}
		return action, "", nil, httpapi.Problem(err)
	}
	return action, token, worker, nil
}

// started is a run that a worker of this process executes from the commit that made it runnable
// (StartReserved): run as committed, settled what waits for the worker to settle it.
type started struct {
	run     work.FlowRun
	settled func(context.Context, time.Duration) (work.FlowRun, bool)
}

// startedRun is run as its reserved worker executes it; nil when no worker of this process
// started it.
func startedRun(run work.FlowRun, settled func(context.Context, time.Duration) (work.FlowRun, bool)) *started {
	if settled == nil {
		return nil
	}
	return &started{run: run, settled: settled}
}

func (s *routes) wakeExecutor() {
	if e := s.Executor(); e != nil {
		e.Wake()
	}
}

// settle waits up to seconds for the conversation's latest run to ask, answer or end, and reads
// the conversation then. worker, when this process's worker executes that run, tells the run it
// settled without a read; the settled run is returned when it is known.
func (s *routes) settle(ctx context.Context, i domain.Interaction, seconds int, worker *started) (domain.Interaction, *work.FlowRun, error) {
	if i.CurrentRunID == "" || seconds <= 0 {
		return i, nil, nil
	}
	timeout := time.Duration(min(seconds, maxWaitSeconds)) * time.Second
	var (
		run   work.FlowRun
		known bool
		err   error
	)
	if worker != nil && worker.run.ID == i.CurrentRunID {
		began := time.Now()
		if run, known = worker.settled(ctx, timeout); !known {
			if left := timeout - time.Since(began); left > 0 {
				_, err = s.Work().WaitSettled(ctx, i.WorkspaceID, worker.run, left)
			}
		}
	} else if run, err = s.Work().Run(ctx, i.WorkspaceID, i.CurrentRunID); err == nil {
		_, err = s.Work().WaitSettled(ctx, i.WorkspaceID, run, timeout)
	}
	if err != nil {
		return i, nil, httpapi.Problem(err)
	}
	next, err := s.workplace.Interaction(ctx, i.WorkspaceID, i.ID)
	if err != nil {
		return i, nil, httpapi.Problem(err)
	}
	if known {
		return next, &run, nil
	}
	return next, nil, nil
}

// exchange describes the conversation i after a request.
// settled, when set, is the run its worker left settled a moment ago: the conversation's current
// run then is not read again.
func (s *routes) exchange(ctx context.Context, i domain.Interaction, msg *InteractionMessage, token string, settled *work.FlowRun) (*exchangeOutput, error) {
	if settled != nil && settled.ID != i.CurrentRunID {
		settled = nil
	}
	view, err := s.interactionView(ctx, i, settled)
	if err != nil {
		return nil, err
	}
	out := &exchangeOutput{Body: Exchange{Interaction: view, Message: msg, ResumeToken: token}}
	if i.CurrentRunID != "" {
		var run work.FlowRun
		if settled != nil {
			run = *settled
		} else if run, err = s.Work().Run(ctx, i.WorkspaceID, i.CurrentRunID); err != nil {
			return nil, httpapi.Problem(err)
		}
		if out.Body.Action, err = s.actionOf(ctx, run); err != nil {
			return nil, err
		}
	}
	if view.TaskID != "" {
		t, err := s.workplace.Task(ctx, i.WorkspaceID, view.TaskID)
		if err == nil {
			task := taskOf(t)
			out.Body.Task = &task
		} else if !errors.Is(err, domain.ErrNotFound) {
			return nil, httpapi.Problem(err)
		}
	}
	return out, nil
}

// actionOf is the functional action of a run: its question, its answer, its failure, or working.
func (s *routes) actionOf(ctx context.Context, run work.FlowRun) (*InteractionAction, error) {
	switch run.State {
	case work.StateActionRequired:
		a, err := s.Work().OpenPendingAction(ctx, run.ID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		if a == nil {
			return &InteractionAction{Type: "working"}, nil
		}
		kind := map[string]string{work.KindChoice: "requestChoice", work.KindConfirmation: "requestConfirmation", work.KindApproval: "requestConfirmation"}[a.Kind]
		if kind == "" {
			kind = "requestInput"
		}
		pending := pendingActionOf(a)
		if err := s.answerable(ctx, pending); err != nil {
			return nil, err
		}
		return &InteractionAction{Type: kind, Text: a.Prompt, PendingAction: pending}, nil
	case work.StateCompleted:
		action, text, title := domain.FunctionalAction(run.Result)
		if action == "createTask" && text == "" {
			text = title
		}
		return &InteractionAction{Type: action, Text: text}, nil
	case work.StateFailed:
		return &InteractionAction{Type: "showError", Text: run.Reason}, nil
	case work.StateCancelled:
		return &InteractionAction{Type: "showError", Text: "The work was cancelled"}, nil
	}
	return &InteractionAction{Type: "working"}, nil
}

func (s *routes) interactionView(ctx context.Context, i domain.Interaction, current *work.FlowRun) (Interaction, error) {
	view := Interaction{ID: i.ID, Entry: EntryRef{Namespace: i.EntryNamespace, Name: i.EntryName}, Title: i.Title, State: i.State,
		FollowUpPolicy: i.FollowUpPolicy, Version: i.Version, CreatedAt: i.CreatedAt, UpdatedAt: i.UpdatedAt}
	if i.LastTaskID != "" {
		t, err := s.workplace.Task(ctx, i.WorkspaceID, i.LastTaskID)
		switch {
		case err == nil && t.Visible:
			view.TaskID = t.ID
		case err != nil && !errors.Is(err, domain.ErrNotFound):
			return view, httpapi.Problem(err)
		}
	}
	if i.CurrentRunID != "" && i.State == domain.InteractionActive {
		var err error
		run := work.FlowRun{}
		if current != nil && current.ID == i.CurrentRunID {
			run = *current
		} else {
			run, err = s.Work().Run(ctx, i.WorkspaceID, i.CurrentRunID)
		}
		if err != nil && !errors.Is(err, work.ErrNotFound) {
			return view, httpapi.Problem(err)
		}
		view.Blocked = err == nil && run.State == work.StateActionRequired
	}
	return view, nil
}

func messageOf(m domain.Message) InteractionMessage {
	out := InteractionMessage{ID: m.ID, Seq: m.Seq, Role: m.Role, Kind: m.Kind, Text: m.Text, Pending: m.Pending, CreatedAt: m.CreatedAt}
	if m.Kind == domain.MessageQuestion && len(m.Payload) > 0 {
		var q Question
		if json.Unmarshal(m.Payload, &q) == nil {
			out.Question = &q
		}
	}
	return out
}

func pendingActionOf(a *work.PendingAction) *InteractionPendingAction {
	if a == nil {
		return nil
	}
	status := a.Status
	if status == work.ActionCreated && !time.Now().Before(a.ExpiresAt) {
		// Past its expiry it can no longer be answered, even before the expiry sweep marks it.
		status = work.ActionExpired
	}
	return &InteractionPendingAction{ID: a.ID, Kind: a.Kind, Prompt: a.Prompt, Options: a.Options, Status: status, ExpiresAt: a.ExpiresAt,
		OnExpiry: a.OnExpiry, EscalatedAt: escalatedAt(a.EscalatedAt), Resolution: a.Resolution, Call: a.Call, Budget: a.Budget}
}

// interactionQuestion is the Interaction of the workspace and the run its pending action
// suspends: 404 Problem Details when either is not the workspace's.
func (s *routes) interactionQuestion(ctx context.Context, workspaceID, interactionID, actionID string) (domain.Interaction, string, error) {
	i, err := s.workplace.Interaction(ctx, workspaceID, interactionID)
	if err != nil {
		return i, "", httpapi.Problem(err)
	}
	runID, err := s.workplace.PendingActionOf(ctx, workspaceID, i.ID, "", actionID)
	if err != nil {
		return i, "", httpapi.Problem(err)
	}
	return i, runID, nil
}
