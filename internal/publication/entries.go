package publication

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	target, pins, err := p.resolveBinding(ctx, entry.Namespace, &def.Binding, field.NewPath("definition", "binding"))
	if err != nil {
		return EntryResult{}, err
	}
	var continuation *platformv1.FlowVersionReference
	if def.Continuation != nil {
		ref, more, err := p.resolveBinding(ctx, entry.Namespace, def.Continuation, field.NewPath("definition", "continuation"))
		if err != nil {
			return EntryResult{}, err
		}
		continuation, pins = &ref, append(pins, more...)
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
	if result.Changed {
		if err := p.pinDependencies(ctx, result.Published, pins); err != nil {
			return EntryResult{}, err
		}
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
// of a user Flow of the workspace, or the one version of the agent's Direct Agent Flow. It also
// answers the dependencies that the publication pins, whose deletion the published Entry refuses.
func (p *Publisher) resolveBinding(ctx context.Context, ns string, b *platformv1.EntryBinding, path *field.Path) (platformv1.FlowVersionReference, []pin, error) {
	if b.Agent != nil {
		agentPath := path.Child("agent", "name")
		agent := &platformv1.Agent{}
		err := p.reader().Get(ctx, client.ObjectKey{Namespace: ns, Name: string(b.Agent.Name)}, agent)
		if apierrors.IsNotFound(err) || (err == nil && !agent.DeletionTimestamp.IsZero()) {
			return platformv1.FlowVersionReference{}, nil, invalid(field.NotFound(agentPath, b.Agent.Name))
		}
		if err != nil {
			return platformv1.FlowVersionReference{}, nil, err
		}
		ref, err := p.EnsureDirectAgentFlow(ctx, ns, agent)
		if errors.Is(err, ErrConflict) {
			return ref, nil, invalid(field.Invalid(agentPath, b.Agent.Name, err.Error()))
		}
		return ref, []pin{{object: agent, gone: field.NotFound(agentPath, b.Agent.Name)}}, err
	}
	ref := b.Flow
	flowPath := path.Child("flow", "name")
	flowNS, err := resourcenamespace.Resolve(ctx, p.reader(), ns, ref.Namespace)
	if errors.Is(err, resourcenamespace.ErrNotFound) {
		return platformv1.FlowVersionReference{}, nil, invalid(field.NotFound(path.Child("flow", "namespace"), ref.Namespace))
	}
	if err != nil {
		return platformv1.FlowVersionReference{}, nil, err
	}
	flow := &platformv1.Flow{}
	err = p.reader().Get(ctx, client.ObjectKey{Namespace: flowNS, Name: string(ref.Name)}, flow)
	if apierrors.IsNotFound(err) || (err == nil && !flow.DeletionTimestamp.IsZero()) {
		return platformv1.FlowVersionReference{}, nil, invalid(field.NotFound(flowPath, ref.Name))
	}
	if err != nil {
		return platformv1.FlowVersionReference{}, nil, err
	}
	if IsSystemManaged(flow) {
		return platformv1.FlowVersionReference{}, nil, invalid(field.Invalid(flowPath, ref.Name,
			"is a system-managed Direct Agent Flow; bind its agent instead"))
	}
	version := ref.Version
	if version == "" {
		if version = flow.Status.ActiveVersion; version == "" {
			return platformv1.FlowVersionReference{}, nil, invalid(field.Invalid(path.Child("flow", "version"), "",
				fmt.Sprintf("Flow %q has no active version: publish and activate one, or name an exact version", ref.Name)))
		}
	}
	fv, err := FindFlowVersion(ctx, p.reader(), flowNS, flow.Name, version)
	if err != nil {
		return platformv1.FlowVersionReference{}, nil, err
	}
	if fv == nil {
		return platformv1.FlowVersionReference{}, nil, invalid(field.NotFound(path.Child("flow", "version"), version))
	}
	pins := []pin{{object: flow, gone: field.NotFound(flowPath, ref.Name)}}
	// The agents the pinned version hands work to are protected by the published Entry too (see
	// the admission rules). One that does not exist now is not pinned: it was never there to lose.
	for _, name := range agentsOf(&fv.Definition.Snapshot) {
		agent := &platformv1.Agent{}
		err := p.reader().Get(ctx, client.ObjectKey{Namespace: flowNS, Name: name}, agent)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return platformv1.FlowVersionReference{}, nil, err
		}
		pins = append(pins, pin{object: agent, gone: field.Invalid(flowPath, ref.Name,
			fmt.Sprintf("Agent %q, which version %s of the Flow hands work to, was deleted while the Entry was published", name, version))})
	}
	return platformv1.FlowVersionReference{Name: ref.Name, Namespace: ref.Namespace, Version: version}, pins, nil
}

// agentsOf are the names of the agents a Flow definition hands work to: the target of a Direct
// Flow and the agents of the Agent steps of an Orchestration Flow, each once.
func agentsOf(definition *platformv1.FlowDefinition) []string {
	var names []string
	add := func(name string) {
		if name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if target := definition.Target; target != nil && target.Kind == platformv1.AgentFlowTarget {
		add(string(target.ID))
	}
	for _, step := range definition.Steps {
		if step.Type == platformv1.AgentStep && step.Agent != nil {
			add(string(step.Agent.Name))
		}
	}
	return names
}

// PinnedByAnnotation names, on an Agent or a Flow, the last PublishedEntry whose publication
// pinned it (`<namespace>/<name>/<uid>`). It is written after that PublishedEntry is created,
// so that a concurrent delete of the object sees the publication (see pinDependencies).
const PinnedByAnnotation = "platform/pinned-by"

// pin is an object a publication depends on, and the field error of the draft when that object
// is deleted while the Entry is published.
type pin struct {
	object client.Object
	gone   *field.Error
}

// pinDependencies makes the publication of published and the deletion of what it pins exclude
// each other. The admission rule that refuses to delete an Agent or a Flow that a PublishedEntry
// references reads the PublishedEntries, and the kube API deletes an object only if it did not
// change since the rule was checked against it (the delete is conditional on the object's
// revision, and re-checked when that moved). So a write to each dependency after the
// PublishedEntry exists settles any race: a delete that committed before the write makes the
// write fail (the dependency is gone, and the publication is withdrawn), and a delete that
// commits after it was checked after the write, when the PublishedEntry was already there to
// refuse it. A dependency that is gone or terminating withdraws the publication with the draft's
// field error; nothing is left pinned to it.
func (p *Publisher) pinDependencies(ctx context.Context, published *platformv1.PublishedEntry, pins []pin) error {
	// The value changes with every publication, so that the write is never a no-op that the kube
	// API would skip without a new revision.
	by := published.Namespace + "/" + published.Name + "/" + string(published.UID)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{PinnedByAnnotation: by}}})
	if err != nil {
		return err
	}
	var errs field.ErrorList
	for _, pin := range pins {
		err := p.Client.Patch(ctx, pin.object, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldOwner))
		switch {
		case apierrors.IsNotFound(err) || (err == nil && !pin.object.GetDeletionTimestamp().IsZero()):
			errs = append(errs, pin.gone)
		case err != nil:
			return p.withdraw(ctx, published, err)
		}
	}
	if len(errs) > 0 {
		return p.withdraw(ctx, published, &InvalidError{Errs: errs})
	}
	return nil
}

// withdraw deletes a PublishedEntry whose publication could not pin what it depends on, and
// returns why.
func (p *Publisher) withdraw(ctx context.Context, published *platformv1.PublishedEntry, why error) error {
	uid := published.UID
	if err := p.Client.Delete(ctx, published, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%w; and withdrawing published entry %s/%s failed: %w", why, published.Namespace, published.Name, err)
	}
	return why
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
