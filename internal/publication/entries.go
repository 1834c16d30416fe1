package publication

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/resourcenamespace"
)

// AutomaticPublisher is who publishes an Entry whose publication is Automatic.
const AutomaticPublisher = "platform:entry-controller"

// maxPublicationRecords is how many publications an Entry's status remembers.
const maxPublicationRecords = 10

// EntryResult is what PublishEntry did.
type EntryResult struct {
	Published *platformv1.PublishedEntry
	// Changed is false when the draft was published unchanged before: publishing again is a no-op.
	Changed bool
}

// PublishEntry validates the Entry's draft, resolves its binding (and continuation) to exact Flow
// versions — through the system-managed Direct Agent Flow for an Agent binding — and writes the
// immutable PublishedEntry: the presentation, the owner workspace and the pinned targets, never
// the binding. Publishing an unchanged draft changes nothing. by is who publishes (a Principal id
// or AutomaticPublisher); each publication that changes something is recorded on the Entry's
// status. A draft that cannot be published is an *InvalidError with its field paths, and nothing
// is written.
func (p *Publisher) PublishEntry(ctx context.Context, entry *platformv1.Entry, by string) (EntryResult, error) {
	def := &entry.Definition
	if errs := ValidateDraft(def, field.NewPath("definition")); len(errs) > 0 {
		return EntryResult{}, &InvalidError{Errs: errs}
	}
	owner, err := p.ownerWorkspaceID(ctx, entry.Namespace)
	if err != nil {
		return EntryResult{}, err
	}
	target, err := p.resolveBinding(ctx, entry.Namespace, &def.Binding, field.NewPath("definition", "binding"))
	if err != nil {
		return EntryResult{}, err
	}
	var continuation *platformv1.FlowVersionReference
	if def.Continuation != nil {
		ref, err := p.resolveBinding(ctx, entry.Namespace, def.Continuation, field.NewPath("definition", "continuation"))
		if err != nil {
			return EntryResult{}, err
		}
		continuation = &ref
	}
	now := p.now()
	want := &platformv1.PublishedEntry{
		ObjectMeta: metav1.ObjectMeta{Namespace: entry.Namespace, Name: entry.Name},
		Definition: platformv1.PublishedEntryDefinition{
			EntryPresentation:  *def.EntryPresentation.DeepCopy(),
			OwnerWorkspaceID:   owner,
			ResolvedTarget:     target,
			ContinuationTarget: continuation,
			EntryGeneration:    entry.Generation,
			PublishedAt:        &now,
			PublishedBy:        by,
		},
	}
	want.Definition.Exposure.Version = platformv1.CurrentExposurePolicyVersion
	result, err := p.replacePublished(ctx, want)
	if err != nil {
		return EntryResult{}, err
	}
	if result.Changed || entry.Status.PublishedGeneration != entry.Generation {
		record := platformv1.EntryPublicationRecord{
			Generation: entry.Generation, Revision: entry.ResourceVersion, PublishedAt: *result.Published.Definition.PublishedAt,
			PublishedBy: result.Published.Definition.PublishedBy, ResolvedTarget: target, ContinuationTarget: continuation,
		}
		if err := p.recordEntryPublication(ctx, entry, record); err != nil {
			return EntryResult{}, err
		}
	}
	return result, nil
}

// replacePublished writes want unless the published projection already says the same; a
// different one is replaced as a whole (delete, then create), because a PublishedEntry never
// changes after creation.
func (p *Publisher) replacePublished(ctx context.Context, want *platformv1.PublishedEntry) (EntryResult, error) {
	for attempt := 0; attempt < 5; attempt++ {
		existing := &platformv1.PublishedEntry{}
		err := p.reader().Get(ctx, client.ObjectKeyFromObject(want), existing)
		switch {
		case apierrors.IsNotFound(err):
			err := p.Client.Create(ctx, want, client.FieldOwner(FieldOwner))
			if apierrors.IsAlreadyExists(err) {
				continue // another publisher was faster; compare with what it wrote
			}
			if err != nil {
				return EntryResult{}, err
			}
			return EntryResult{Published: want, Changed: true}, nil
		case err != nil:
			return EntryResult{}, err
		case SamePublication(&existing.Definition, &want.Definition):
			return EntryResult{Published: existing}, nil
		}
		uid := existing.UID
		err = p.Client.Delete(ctx, existing, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return EntryResult{}, err
		}
	}
	return EntryResult{}, fmt.Errorf("published entry %s/%s: concurrent publications did not settle; retry: %w", want.Namespace, want.Name, ErrConflict)
}

// SamePublication says whether two published projections publish the same thing: everything but
// when, by whom and from which generation of the draft.
func SamePublication(a, b *platformv1.PublishedEntryDefinition) bool {
	x, y := a.DeepCopy(), b.DeepCopy()
	x.PublishedAt, y.PublishedAt = nil, nil
	x.PublishedBy, y.PublishedBy = "", ""
	x.EntryGeneration, y.EntryGeneration = 0, 0
	return equality.Semantic.DeepEqual(x, y)
}

// recordEntryPublication records a publication on the Entry's status, newest first.
func (p *Publisher) recordEntryPublication(ctx context.Context, entry *platformv1.Entry, record platformv1.EntryPublicationRecord) error {
	current := &platformv1.Entry{}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := p.reader().Get(ctx, client.ObjectKeyFromObject(entry), current); err != nil {
			return err
		}
		// A reconcile that started before the record was written publishes nothing new: the same
		// projection (revision) of the same generation is recorded once.
		if records := current.Status.Publications; len(records) > 0 && records[0].Revision == record.Revision && records[0].Generation == record.Generation {
			entry.Status = current.Status
			entry.ResourceVersion = current.ResourceVersion
			return nil
		}
		current.Status.PublishedGeneration = record.Generation
		records := append([]platformv1.EntryPublicationRecord{record}, current.Status.Publications...)
		if len(records) > maxPublicationRecords {
			records = records[:maxPublicationRecords]
		}
		current.Status.Publications = records
		if err := p.Client.Status().Update(ctx, current, client.FieldOwner(FieldOwner)); err != nil {
			return err
		}
		entry.Status = current.Status
		entry.ResourceVersion = current.ResourceVersion
		return nil
	})
}

// ownerWorkspaceID is the id of the workspace that kube namespace ns belongs to.
func (p *Publisher) ownerWorkspaceID(ctx context.Context, ns string) (string, error) {
	workspace, err := resourcenamespace.WorkspaceOfName(ctx, p.reader(), ns)
	if err != nil {
		return "", err
	}
	own := &corev1.Namespace{}
	if err := p.reader().Get(ctx, client.ObjectKey{Name: workspace}, own); err != nil {
		return "", err
	}
	return resourcenamespace.WorkspaceIDOf(own), nil
}

// resolveBinding is the exact Flow version a binding publishes to: the pinned or active version
// of a user Flow of the workspace, or the one version of the agent's Direct Agent Flow.
func (p *Publisher) resolveBinding(ctx context.Context, ns string, b *platformv1.EntryBinding, path *field.Path) (platformv1.FlowVersionReference, error) {
	if b.Agent != nil {
		agent := &platformv1.Agent{}
		err := p.reader().Get(ctx, client.ObjectKey{Namespace: ns, Name: string(b.Agent.Name)}, agent)
		if apierrors.IsNotFound(err) {
			return platformv1.FlowVersionReference{}, invalid(field.NotFound(path.Child("agent", "name"), b.Agent.Name))
		}
		if err != nil {
			return platformv1.FlowVersionReference{}, err
		}
		ref, err := p.EnsureDirectAgentFlow(ctx, ns, agent)
		if errors.Is(err, ErrConflict) {
			return ref, invalid(field.Invalid(path.Child("agent", "name"), b.Agent.Name, err.Error()))
		}
		return ref, err
	}
	ref := b.Flow
	flowNS, err := resourcenamespace.Resolve(ctx, p.reader(), ns, ref.Namespace)
	if errors.Is(err, resourcenamespace.ErrNotFound) {
		return platformv1.FlowVersionReference{}, invalid(field.NotFound(path.Child("flow", "namespace"), ref.Namespace))
	}
	if err != nil {
		return platformv1.FlowVersionReference{}, err
	}
	flow := &platformv1.Flow{}
	err = p.reader().Get(ctx, client.ObjectKey{Namespace: flowNS, Name: string(ref.Name)}, flow)
	if apierrors.IsNotFound(err) {
		return platformv1.FlowVersionReference{}, invalid(field.NotFound(path.Child("flow", "name"), ref.Name))
	}
	if err != nil {
		return platformv1.FlowVersionReference{}, err
	}
	if IsSystemManaged(flow) {
		return platformv1.FlowVersionReference{}, invalid(field.Invalid(path.Child("flow", "name"), ref.Name,
			"is a system-managed Direct Agent Flow; bind its agent instead"))
	}
	version := ref.Version
	if version == "" {
		if version = flow.Status.ActiveVersion; version == "" {
			return platformv1.FlowVersionReference{}, invalid(field.Invalid(path.Child("flow", "version"), "",
				fmt.Sprintf("Flow %q has no active version: publish and activate one, or name an exact version", ref.Name)))
		}
	}
	fv, err := FindFlowVersion(ctx, p.reader(), flowNS, flow.Name, version)
	if err != nil {
		return platformv1.FlowVersionReference{}, err
	}
	if fv == nil {
		return platformv1.FlowVersionReference{}, invalid(field.NotFound(path.Child("flow", "version"), version))
	}
	return platformv1.FlowVersionReference{Name: ref.Name, Namespace: ref.Namespace, Version: version}, nil
}

// ValidateDraft checks what the CRD schema cannot about a draft that is to be published, with
// the field paths under path (`definition`).
func ValidateDraft(def *platformv1.EntryDefinition, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	fields := path.Child("fields")
	primary := -1
	for i, f := range def.Fields {
		if f.Role == platformv1.PrimaryInputRole {
			primary = i
			if f.Type != "" && f.Type != platformv1.TextField && f.Type != platformv1.MultilineTextField {
				errs = append(errs, field.Invalid(fields.Index(i).Child("type"), f.Type, "the PrimaryInput field is Text or MultilineText"))
			}
		}
		if f.Type == platformv1.ChoiceField && f.Default != "" && !hasChoice(f.Choices, f.Default) {
			errs = append(errs, field.Invalid(fields.Index(i).Child("default"), f.Default, "must be one of the field's choices"))
		}
	}
	if (def.Type == "" || def.Type == platformv1.PromptEntry) && primary < 0 {
		errs = append(errs, field.Required(fields, "a Prompt Entry has one field with the role PrimaryInput: the composer's text"))
	}
	exposure := path.Child("exposure")
	surfaces := map[platformv1.ExposureSurface]bool{}
	for _, s := range def.Exposure.Surfaces {
		surfaces[s] = true
	}
	if len(def.Exposure.Surfaces) == 0 {
		surfaces[platformv1.WorkplaceSurface] = true
	}
	if def.Exposure.Placement == platformv1.TenantHomePlacement && !surfaces[platformv1.WorkplaceSurface] {
		errs = append(errs, field.Invalid(exposure.Child("placement"), def.Exposure.Placement, "a Tenant-home placement needs the Workplace surface"))
	}
	for i, role := range def.ConsoleRoles {
		if role == platformv1.FallbackConsoleRole && !surfaces[platformv1.ConsoleSurface] {
			errs = append(errs, field.Invalid(path.Child("consoleRoles").Index(i), role, "a Console role needs the Console surface in exposure.surfaces"))
		}
	}
	return errs
}

func hasChoice(choices []platformv1.FlowChoice, value string) bool {
	for _, c := range choices {
		if c.Value == value {
			return true
		}
	}
	return false
}
