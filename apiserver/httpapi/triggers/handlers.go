package triggers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/triggers"
	"platform.dev/platform/internal/resourcenamespace"
	"platform.dev/platform/internal/schedule"
)

// kubeNamespace is the kube namespace of resource namespace rns of the request's workspace; 404
// when the workspace has none of that name.
func (r *routes) kubeNamespace(ctx context.Context, rns platformv1.ResourceNamespace) (string, error) {
	workspace, err := r.Workspace(ctx)
	if err != nil {
		return "", err
	}
	ns, err := resourcenamespace.Resolve(ctx, r.Kube(), workspace, rns)
	if errors.Is(err, resourcenamespace.ErrNotFound) {
		return "", huma.Error404NotFound(fmt.Sprintf("resource namespace %q not found in the workspace", rns))
	}
	return ns, httpapi.Problem(err)
}

// read reads the Trigger the path names.
func (r *routes) read(ctx context.Context, p item) (*platformv1.Trigger, error) {
	ns, err := r.kubeNamespace(ctx, p.resourceNamespace())
	if err != nil {
		return nil, err
	}
	t := &platformv1.Trigger{}
	if err := r.Kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: p.triggerName()}, t); err != nil {
		return nil, httpapi.Problem(err)
	}
	return t, nil
}

func output(t *platformv1.Trigger, rns platformv1.ResourceNamespace) *triggerOutput {
	return &triggerOutput{ETag: httpapi.ETag(t.ResourceVersion), Body: triggerFrom(t, rns)}
}

// caller is the Principal of the request, who becomes the owner of what it writes.
func caller(ctx context.Context) (string, error) {
	rc, ok := httpapi.RequestContextFrom(ctx)
	if !ok || rc.PrincipalID == "" {
		return "", huma.Error403Forbidden("no resolved management context: the request has no Principal")
	}
	return rc.PrincipalID, nil
}

// write sets the metadata and definition of body onto t, with the caller as owner. The
// annotations the platform keeps (owner, resumed-at) are its own, whatever the body says.
func write(t *platformv1.Trigger, body Trigger, owner string) {
	t.Labels = body.Metadata.Tags
	annotations := map[string]string{}
	for k, v := range body.Metadata.Annotations {
		if k != platformv1.TriggerOwnerAnnotation && k != ResumedAtAnnotation {
			annotations[k] = v
		}
	}
	if resumed, ok := t.Annotations[ResumedAtAnnotation]; ok {
		annotations[ResumedAtAnnotation] = resumed
	}
	annotations[platformv1.TriggerOwnerAnnotation] = owner
	t.Annotations = annotations
	t.Definition = body.Definition
}

// listChunk is how many Triggers a list reads from the kube API at a time: a page is found
// without holding every Trigger of the namespace at once.
const listChunk = 500

// list answers a page of the Triggers of the collection: take of those search matches, after
// skip, in name order (the kube API's).
func (r *routes) list(ctx context.Context, c collection, opts ListOptions) (*httpapi.ListOutput[Trigger], error) {
	ns, err := r.kubeNamespace(ctx, c.resourceNamespace())
	if err != nil {
		return nil, err
	}
	take := opts.Take
	if take <= 0 {
		take = defaultPage
	}
	take = min(take, maxPage)
	words := strings.Fields(strings.ToLower(opts.Search))
	page := make([]Trigger, 0, take)
	skipped := 0
	list := &platformv1.TriggerList{}
	for {
		if err := r.Kube().List(ctx, list, client.InNamespace(ns), client.Limit(listChunk), client.Continue(list.Continue)); err != nil {
			return nil, httpapi.Problem(err)
		}
		for i := range list.Items {
			t := &list.Items[i]
			if !matchesSearch(t, words) {
				continue
			}
			if skipped < opts.Skip {
				skipped++
				continue
			}
			page = append(page, triggerFrom(t, c.resourceNamespace()))
			if len(page) == take {
				return httpapi.ItemsOutput(page), nil
			}
		}
		if list.Continue == "" {
			return httpapi.ItemsOutput(page), nil
		}
	}
}

// matchesSearch reports whether every word appears in what the Console's list shows of t.
func matchesSearch(t *platformv1.Trigger, words []string) bool {
	if len(words) == 0 {
		return true
	}
	parts := []string{t.Name, t.Definition.DisplayName, triggerState(t)}
	if f := t.Definition.Target.Flow; f != nil {
		parts = append(parts, string(f.Name))
	}
	if s := t.Definition.Source.Schedule; s != nil {
		parts = append(parts, string(s.Type), s.Expression, s.TimeZone)
	}
	text := strings.ToLower(strings.Join(parts, " "))
	for _, w := range words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

// triggerState is the state the Console shows: Disabled, Paused or Enabled.
func triggerState(t *platformv1.Trigger) string {
	if t.Definition.Enabled != nil && !*t.Definition.Enabled {
		return "Disabled"
	}
	if ready := meta.FindStatusCondition(t.Status.Conditions, platformv1.ReadyCondition); ready != nil && ready.Reason == platformv1.PausedReason {
		return "Paused"
	}
	return "Enabled"
}

func (r *routes) get(ctx context.Context, p item) (*triggerOutput, error) {
	t, err := r.read(ctx, p)
	if err != nil {
		return nil, err
	}
	return output(t, p.resourceNamespace()), nil
}

func (r *routes) create(ctx context.Context, c collection, body Trigger) (*createdOutput, error) {
	if err := body.Validate(""); err != nil {
		return nil, err
	}
	owner, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	ns, err := r.kubeNamespace(ctx, c.resourceNamespace())
	if err != nil {
		return nil, err
	}
	t := &platformv1.Trigger{}
	t.Namespace, t.Name = ns, body.Metadata.Name
	write(t, body, owner)
	if err := r.Kube().Create(ctx, t, client.FieldOwner(httpapi.FieldManager)); err != nil {
		return nil, httpapi.Problem(err)
	}
	return &createdOutput{Status: http.StatusCreated, ETag: httpapi.ETag(t.ResourceVersion), Body: triggerFrom(t, c.resourceNamespace())}, nil
}

// current reads the Trigger a write changes and checks the ETag the caller names.
func (r *routes) current(ctx context.Context, p item, ifMatch httpapi.IfMatchInput, required bool) (*platformv1.Trigger, error) {
	var resourceVersion string
	if required || ifMatch.IfMatch != "" {
		var err error
		if resourceVersion, err = ifMatch.RequiredResourceVersion(); err != nil {
			return nil, err
		}
	}
	t, err := r.read(ctx, p)
	if err != nil {
		return nil, err
	}
	if resourceVersion != "" && t.ResourceVersion != resourceVersion {
		return nil, httpapi.StaleETag("trigger", t.Name)
	}
	return t, nil
}

func (r *routes) replace(ctx context.Context, p item, ifMatch httpapi.IfMatchInput, body Trigger) (*triggerOutput, error) {
	if err := body.Validate(p.triggerName()); err != nil {
		return nil, err
	}
	owner, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	t, err := r.current(ctx, p, ifMatch, true)
	if err != nil {
		return nil, err
	}
	write(t, body, owner)
	// The kube update carries the resourceVersion, so a change in between is refused there too.
	if err := r.Kube().Update(ctx, t, client.FieldOwner(httpapi.FieldManager)); err != nil {
		return nil, httpapi.Problem(err)
	}
	return output(t, p.resourceNamespace()), nil
}

func (r *routes) delete(ctx context.Context, p item, ifMatch httpapi.IfMatchInput) error {
	t, err := r.current(ctx, p, ifMatch, true)
	if err != nil {
		return err
	}
	uid, resourceVersion := t.UID, t.ResourceVersion
	return httpapi.Problem(r.Kube().Delete(ctx, t, client.Preconditions{UID: &uid, ResourceVersion: &resourceVersion}))
}

// toggle enables or disables the Trigger. Enabling makes the caller the owner and resumes a
// paused Trigger; what is already so is left unchanged.
func (r *routes) toggle(ctx context.Context, p item, opts ToggleOptions, enable bool) (*triggerOutput, error) {
	owner, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	t, err := r.current(ctx, p, httpapi.IfMatchInput{IfMatch: opts.IfMatch}, false)
	if err != nil {
		return nil, err
	}
	enabled := t.Definition.Enabled == nil || *t.Definition.Enabled
	ready := meta.FindStatusCondition(t.Status.Conditions, platformv1.ReadyCondition)
	paused := ready != nil && ready.Reason == platformv1.PausedReason
	changed := enabled != enable
	if enable && paused {
		svc := r.Triggers()
		if svc == nil {
			return nil, huma.Error503ServiceUnavailable("this server runs without the Work store: Triggers cannot be resumed")
		}
		if err := svc.Resume(ctx, string(t.UID)); err != nil {
			return nil, httpapi.Problem(err)
		}
		// The write tells the scheduler to look again.
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		t.Annotations[ResumedAtAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
		changed = true
	}
	if !changed {
		return output(t, p.resourceNamespace()), nil
	}
	t.Definition.Enabled = &enable
	if enable {
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		t.Annotations[platformv1.TriggerOwnerAnnotation] = owner
	}
	if err := r.Kube().Update(ctx, t, client.FieldOwner(httpapi.FieldManager)); err != nil {
		return nil, httpapi.Problem(err)
	}
	return output(t, p.resourceNamespace()), nil
}

func (r *routes) service() (*domain.Service, error) {
	if svc := r.Triggers(); svc != nil {
		return svc, nil
	}
	return nil, huma.Error503ServiceUnavailable("this server runs without the Work store: Triggers do not fire here")
}

// run submits the Trigger's Work now, as the caller.
func (r *routes) run(ctx context.Context, p item, opts RunOptions) (*occurrenceOutput, error) {
	svc, err := r.service()
	if err != nil {
		return nil, err
	}
	principal, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	t, err := r.read(ctx, p)
	if err != nil {
		return nil, err
	}
	o, fired, err := svc.Fire(ctx, t, domain.Firing{Kind: platformv1.ManualOccurrence, ScheduledAt: time.Now(), PrincipalID: principal, Key: opts.IdempotencyKey})
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	if fired {
		r.Log().Info("trigger run now", "trigger", t.Name, "namespace", t.Namespace, "occurrence", o.ID, "outcome", o.Outcome, "workItemId", o.WorkItemID)
		if r.Executor() != nil && o.WorkItemID != "" {
			r.Executor().Wake()
		}
		r.showLast(ctx, t, o)
	}
	if o.Outcome != platformv1.OccurrenceSubmitted {
		return nil, huma.Error409Conflict(fmt.Sprintf("the occurrence %s could not submit (%s): %s", o.ID, o.Reason, o.Message))
	}
	return &occurrenceOutput{Status: http.StatusAccepted, Body: occurrenceFrom(o)}, nil
}

// showLast puts a Run now in the Trigger's status at once (kubectl's LAST, the Console's list):
// the scheduler writes the latest occurrence when it reconciles, for a cron Trigger perhaps days
// later. The write also wakes the scheduler, which writes the status again from the store. Best
// effort: the occurrence is recorded in the store either way.
func (r *routes) showLast(ctx context.Context, t *platformv1.Trigger, o domain.Occurrence) {
	before := t.DeepCopy()
	t.Status.LastOccurrence = o.Status()
	if err := r.Kube().Status().Patch(ctx, t, client.MergeFrom(before)); err != nil {
		r.Log().Info("trigger run now: the status does not show it yet", "trigger", t.Name, "namespace", t.Namespace, "error", err.Error())
	}
}

func (r *routes) occurrences(ctx context.Context, p item, opts HistoryOptions) (*httpapi.ListOutput[Occurrence], error) {
	svc, err := r.service()
	if err != nil {
		return nil, err
	}
	t, err := r.read(ctx, p)
	if err != nil {
		return nil, err
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = defaultOccurrences
	}
	list, err := svc.Occurrences(ctx, string(t.UID), min(limit, maxOccurrences))
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	return httpapi.ListOf(list, occurrenceFrom), nil
}

// SchedulePreview is the body of a schedule preview.
type SchedulePreview struct {
	Schedule platformv1.TriggerSchedule `json:"schedule" doc:"The proposed schedule: type (once, interval, cron), expression and timeZone (IANA)"`
	Count    int                        `json:"count,omitempty" minimum:"1" maximum:"100" default:"10" doc:"How many instants"`
	After    *time.Time                 `json:"after,omitempty" doc:"Instants strictly after this time; now when omitted. An interval counts from it, as a Trigger created then would."`
}

// PreviewInstant is one instant of a previewed schedule.
type PreviewInstant struct {
	At    time.Time `json:"at" doc:"The instant, UTC"`
	Local string    `json:"local" doc:"The instant as a local date and time of the schedule's zone, with its offset (RFC 3339)"`
	Zone  string    `json:"zone" doc:"The zone's abbreviation at the instant (CET, CEST, ...)"`
}

// SchedulePreviewResult lists the next instants of a proposed schedule.
type SchedulePreviewResult struct {
	TimeZone string           `json:"timeZone"`
	Instants []PreviewInstant `json:"instants" doc:"The next instants, oldest first; fewer than count when the schedule ends (a once schedule has one)"`
}

func (r *routes) registerPreview() {
	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "preview-trigger-schedule", Method: http.MethodPost, Path: "/api/triggers/preview", Tags: []string{tagTriggers},
		Summary: "Preview the next instants of a proposed schedule",
		Description: "Checks a schedule as a Trigger's would be (422 with the field path: an unknown time zone, an expression that " +
			"does not parse, a once instant in the past, a cron schedule that never fires such as 0 0 31 2 *) and lists its next " +
			"instants, with the daylight saving rules applied: a local time a change skips fires when the gap ends, a repeated " +
			"one once at its first occurrence. Each instant is searched at most eight years ahead of the one before (29 February " +
			"fires in leap years). Nothing is stored.",
		Errors: []int{http.StatusUnprocessableEntity},
	}, httpapi.PolicyResourcesRead), func(ctx context.Context, in *struct {
		httpapi.WorkspaceInput
		Body SchedulePreview
	}) (*struct{ Body SchedulePreviewResult }, error) {
		after := time.Now()
		if in.Body.After != nil {
			if after = *in.Body.After; after.Year() < 1970 || after.Year() > 9000 {
				return nil, httpapi.BodyInvalid("after", "a time from 1970 to 9000")
			}
		}
		path := field.NewPath("schedule")
		s, errs := schedule.Parse(path, in.Body.Schedule, after)
		if len(errs) == 0 {
			if at, ok := schedule.At(s); ok && !at.After(after) {
				errs = field.ErrorList{field.Invalid(path.Child("expression"), in.Body.Schedule.Expression, "the instant lies in the past: a once schedule would never fire")}
			}
		}
		if len(errs) > 0 {
			return nil, httpapi.FieldErrors(errs)
		}
		count := in.Body.Count
		if count <= 0 {
			count = 10
		}
		loc, _ := schedule.Zone(in.Body.Schedule.TimeZone)
		out := SchedulePreviewResult{TimeZone: in.Body.Schedule.TimeZone, Instants: []PreviewInstant{}}
		instants, err := schedule.Instants(ctx, s, after, min(count, maxPreview))
		if err != nil {
			// Only the request's end stops it: nobody is left to read the answer.
			return nil, huma.Error503ServiceUnavailable("the request ended before the preview was computed")
		}
		for _, at := range instants {
			if at.Year() > 9999 {
				break // beyond what a timestamp spells
			}
			local := at.In(loc)
			zone, _ := local.Zone()
			out.Instants = append(out.Instants, PreviewInstant{At: at.UTC(), Local: local.Format(time.RFC3339), Zone: zone})
		}
		return &struct{ Body SchedulePreviewResult }{Body: out}, nil
	})
}
