package packs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/danielgtaylor/huma/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	srhttp "platform.dev/platform/apiserver/httpapi/sourceregistries"
	packstore "platform.dev/platform/apiserver/packs"
	srdomain "platform.dev/platform/apiserver/sourceregistries"
	"platform.dev/platform/controllers/installedpack"
	"platform.dev/platform/internal/pack"
	"platform.dev/platform/internal/resourcenamespace"
)

// Bounds.
const (
	// operationWait is how long install, update, rollback and uninstall wait for the controller.
	operationWait = 30 * time.Second
	pollInterval  = 100 * time.Millisecond
	// maxListed bounds the installed Packs a list reads.
	maxListed = 500
	// maxFileName bounds the display name kept of an uploaded archive's file name.
	maxFileName = 128
)

// problem is Problem Details with the extension members of the Packs routes.
type problem struct {
	huma.ErrorModel
	Reason  string        `json:"reason,omitempty"`
	Path    string        `json:"path,omitempty"`
	Field   string        `json:"field,omitempty"`
	Changes []pack.Change `json:"changes,omitempty"`
}

func (p *problem) Error() string             { return p.Detail }
func (p *problem) GetStatus() int            { return p.Status }
func (p *problem) ContentType(string) string { return "application/problem+json" }

func newProblem(status int, detail string) *problem {
	return &problem{ErrorModel: huma.ErrorModel{Title: http.StatusText(status), Status: status, Detail: detail}}
}

// archiveProblem turns a refused archive into 413 (too large) or 422 with its reason, path and
// field.
func archiveProblem(err error) error {
	var pe *pack.Error
	if !errors.As(err, &pe) {
		return httpapi.Problem(err)
	}
	status := http.StatusUnprocessableEntity
	if pe.Reason == pack.ReasonTooLarge {
		status = http.StatusRequestEntityTooLarge
	}
	p := newProblem(status, "the Pack archive is refused: "+pe.Error())
	p.Reason, p.Path, p.Field = string(pe.Reason), pe.Path, pe.Field
	return p
}

// displayName keeps of an uploaded file's name only its base, in printable characters, bounded.
func displayName(name string) string {
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	name = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) && r != '"' && r != '<' && r != '>' {
			return r
		}
		return -1
	}, name)
	if name == "." || name == "/" {
		return ""
	}
	if len(name) > maxFileName {
		name = name[:maxFileName]
	}
	return name
}

// upload is the archive a preview or install takes, as the request gave it: a ZIP body, or the
// archive of an imported Source version the JSON body names. From here both take one path.
type upload struct {
	archive  *pack.Archive
	bytes    []byte
	fileName string
	source   platformv1.PackSource
}

// maxSourceBody bounds the JSON body naming an imported Source version.
const maxSourceBody = 16 << 10

// read checks the media type and reads the archive: the body itself (application/zip or
// application/octet-stream), or the archive of the imported Source version an application/json
// body names, fetched from its registry under the registry's outbound rules and checked against
// its manifest's digest.
func (r *routes) read(ctx context.Context, contentType, fileName string, body []byte) (*upload, error) {
	media, _, err := mime.ParseMediaType(contentType)
	if err == nil && media == "application/json" {
		return r.readImported(ctx, body)
	}
	if err != nil || (media != "application/zip" && media != "application/octet-stream") {
		return nil, huma.Error415UnsupportedMediaType("a Pack archive is sent as application/zip or application/octet-stream; an imported Source version is named by application/json {\"source\":{\"sourceVersion\":\"<id>\"}}")
	}
	a, err := pack.Read(body, displayName(fileName))
	if err != nil {
		return nil, archiveProblem(err)
	}
	name := displayName(fileName)
	return &upload{archive: a, bytes: body, fileName: name, source: platformv1.PackSource{Kind: platformv1.UploadPackSource, FileName: name, Digest: a.Digest}}, nil
}

// sourceBody is the JSON body of a preview or install from an imported Source version.
type sourceBody struct {
	Source *srhttp.SourceRef `json:"source"`
}

func (r *routes) readImported(ctx context.Context, body []byte) (*upload, error) {
	if len(body) > maxSourceBody {
		return nil, huma.Error413RequestEntityTooLarge(fmt.Sprintf("a body naming an imported Source version is at most %d bytes", maxSourceBody))
	}
	var in sourceBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || dec.More() {
		return nil, huma.Error400BadRequest(`the body is not {"source":{"sourceVersion":"<id>"}} (publisher, sourceName and version may name it too)`)
	}
	if in.Source == nil {
		return nil, httpapi.BodyInvalid("source", "the imported Source version to install: sourceVersion, or publisher, sourceName and version")
	}
	got, err := srhttp.FetchImportedArchive(ctx, r.Server, *in.Source)
	if err != nil {
		return nil, err
	}
	a, err := pack.Read(got.Bytes, "")
	if err != nil {
		return nil, archiveProblem(err)
	}
	if m := a.Manifest.Metadata; m.Publisher != got.Publisher || m.Name != got.SourceName || m.Version != got.Version {
		// A code as every other registry refusal of these routes has, so a client reads one field.
		return nil, httpapi.NewCodedProblem(http.StatusConflict, srdomain.CodeArchiveMismatch,
			fmt.Sprintf("the archive of the imported Source version %s/%s %s is the Pack %s/%s %s; nothing was changed",
				got.Publisher, got.SourceName, httpapi.Quote(got.Version), m.Publisher, m.Name, httpapi.Quote(m.Version)), nil)
	}
	got.Source.Digest = a.Digest
	return &upload{archive: a, bytes: got.Bytes, source: got.Source}, nil
}

// sourceView is where an archive came from, with a registry's provenance.
func sourceView(s platformv1.PackSource) Source {
	return Source{Kind: string(s.Kind), FileName: s.FileName, Digest: string(s.Digest), Registry: s.Registry, RegistrationUID: s.RegistrationUID,
		ObservationID: s.ObservationID, SourceVersion: s.SourceVersion, ManifestDigest: string(s.ManifestDigest)}
}

func info(a *pack.Archive, fileName string) PackInfo {
	m := a.Manifest.Metadata
	return PackInfo{Publisher: m.Publisher, Name: m.Name, Version: m.Version, DisplayName: m.DisplayName, Description: m.Description,
		Audience: m.Audience, Purpose: m.Purpose, Categories: m.Categories, Tags: m.Tags, Readme: a.Readme, Digest: string(a.Digest),
		FileName: displayName(fileName)}
}

// scope is the workspace of a request.
type scope struct {
	ws, workspaceID string
}

func (r *routes) scope(ctx context.Context) (scope, error) {
	ws, err := r.Workspace(ctx)
	if err != nil {
		return scope{}, err
	}
	rc, _ := httpapi.RequestContextFrom(ctx)
	return scope{ws: ws, workspaceID: rc.WorkspaceID}, nil
}

func (r *routes) store() (*packstore.Store, error) {
	if r.Packs() == nil {
		return nil, huma.Error503ServiceUnavailable("the server has no store for Pack archives")
	}
	return r.Packs(), nil
}

// installed is the InstalledPack of identity id in ws; nil when there is none.
func (r *routes) installed(ctx context.Context, ws, id string) (*platformv1.InstalledPack, error) {
	ip := &platformv1.InstalledPack{}
	err := r.Kube().Get(ctx, client.ObjectKey{Namespace: ws, Name: id}, ip)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	return ip, nil
}

func (r *routes) mustInstalled(ctx context.Context, ws string, in *itemInput) (*platformv1.InstalledPack, error) {
	ip, err := r.installed(ctx, ws, in.Publisher+"."+in.Name)
	if err == nil && ip == nil {
		err = huma.Error404NotFound(fmt.Sprintf("Pack %s.%s is not installed in the workspace", in.Publisher, in.Name))
	}
	return ip, err
}

// archive reads a stored archive.
func (r *routes) archive(ctx context.Context, digest platformv1.Digest) (*pack.Archive, error) {
	s, err := r.store()
	if err != nil {
		return nil, err
	}
	data, err := s.Archive(ctx, digest)
	if errors.Is(err, packstore.ErrNotFound) {
		// An InstalledPack applied with kubectl, or restored without the SQL store it was
		// installed with, names an archive this instance never stored: a conflict, not a fault.
		p := newProblem(http.StatusConflict, fmt.Sprintf("the Pack archive %s is not stored in this instance: install the Pack again from its archive", digest))
		p.Reason = archiveNotStored
		return nil, p
	}
	if err != nil {
		return nil, httpapi.Internal(err)
	}
	return pack.Read(data, "")
}

// archiveNotStored is the reason of the 409 of an archive the store does not hold.
const archiveNotStored = "ArchiveNotStored"

// selections are the stored binding selections of a Pack identity.
func (r *routes) selections(ctx context.Context, sc scope, publisher, name string) (map[string]pack.BindingSelection, error) {
	out := map[string]pack.BindingSelection{}
	s, err := r.store()
	if err != nil {
		return nil, err
	}
	stored, err := s.Bindings(ctx, packstore.Identity{Workspace: sc.ws, Publisher: publisher, Name: name})
	if err != nil {
		return nil, httpapi.Internal(err)
	}
	for _, b := range stored {
		out[b.Binding] = pack.BindingSelection{Namespace: b.Namespace, Name: b.Name}
	}
	return out, nil
}

// plan is the change set of installing a into sc (an update when ip has something installed).
func (r *routes) plan(ctx context.Context, sc scope, a *pack.Archive, ip *platformv1.InstalledPack, sel map[string]pack.BindingSelection) (pack.ChangeSet, error) {
	var live []pack.LiveObject
	kns, err := resourcenamespace.Resolve(ctx, r.Kube(), sc.ws, platformv1.ResourceNamespace(a.Manifest.Namespace()))
	switch {
	case errors.Is(err, resourcenamespace.ErrNotFound):
	case err != nil:
		return pack.ChangeSet{}, httpapi.Problem(err)
	default:
		if live, err = installedpack.Live(ctx, r.Kube(), kns); err != nil {
			return pack.ChangeSet{}, httpapi.Problem(err)
		}
	}
	var from *pack.Archive
	if ip != nil && ip.Status.InstalledDigest != "" && !(ip.Status.State == platformv1.PackDegraded) {
		if from, err = r.archive(ctx, ip.Status.InstalledDigest); err != nil {
			return pack.ChangeSet{}, err
		}
	}
	sat, err := installedpack.Satisfied(ctx, r.Kube(), sc.ws, a, sel)
	if err != nil {
		return pack.ChangeSet{}, httpapi.Problem(err)
	}
	var rec *pack.Installed
	if ip != nil {
		rec = installedpack.InstalledRecord(ip, from)
	}
	return pack.Plan(pack.PlanInput{Archive: a, Bindings: sel, Satisfied: sat, Live: live, Installed: rec,
		Exists: installedpack.Exists(ctx, r.Kube(), sc.ws)}), nil
}

// refuse is the 409 of a blocked change set, or of removed Entries on Dashboards without the
// operator's authorization; nil when the operation may go on.
func (r *routes) refuse(ctx context.Context, sc scope, cs pack.ChangeSet, removeDashboardReferences bool) error {
	var conflicts []pack.Change
	for _, c := range cs.Changes {
		if c.Action == pack.ActionConflict {
			conflicts = append(conflicts, c)
		}
	}
	if len(conflicts) > 0 {
		var names []string
		for _, c := range conflicts {
			names = append(names, fmt.Sprintf("%s %s %s", c.Kind, c.Name, c.Reason))
		}
		p := newProblem(http.StatusConflict, "the operation is blocked; nothing was changed: "+strings.Join(names, "; "))
		p.Reason, p.Changes = "Conflict", conflicts
		return p
	}
	// A Trigger's schedule is a person's: no option removes it, the operator retargets it first.
	msg, changes, err := installedpack.TriggerRefusal(ctx, r.Kube(), sc.ws, cs)
	if err != nil {
		return httpapi.Problem(err)
	}
	if msg != "" {
		p := newProblem(http.StatusConflict, msg+"; nothing was changed")
		p.Reason, p.Changes = "TriggerReferences", changes
		return p
	}
	if removeDashboardReferences {
		return nil
	}
	var on []string
	changes = nil
	for _, c := range cs.Changes {
		if c.Action != pack.ActionRemove || c.Kind != "Entry" {
			continue
		}
		ds, err := installedpack.DashboardsReferencing(ctx, r.Kube(), sc.ws, platformv1.ResourceNamespace(cs.Namespace), c.Name)
		if err != nil {
			return httpapi.Problem(err)
		}
		if len(ds) > 0 {
			on = append(on, fmt.Sprintf("Entry %s is on Dashboard %s", c.Name, strings.Join(ds, ", ")))
			changes = append(changes, c)
		}
	}
	if len(on) > 0 {
		p := newProblem(http.StatusConflict, strings.Join(on, "; ")+": removing it needs removeDashboardReferences=true; nothing was changed")
		p.Reason, p.Changes = "DashboardReferences", changes
		return p
	}
	return nil
}

func busy(ip *platformv1.InstalledPack) error {
	if op := ip.Status.Operation; ip.Generation != ip.Status.ObservedGeneration ||
		(op != nil && (op.Phase == platformv1.PackApplying || op.Phase == platformv1.PackCompensating)) {
		p := newProblem(http.StatusConflict, fmt.Sprintf("an operation on Pack %s is under way; retry when it ended", ip.Name))
		p.Reason = "OperationInProgress"
		return p
	}
	return nil
}

func (r *routes) preview(ctx context.Context, in *archiveInput) (*previewOutput, error) {
	sc, err := r.scope(ctx)
	if err != nil {
		return nil, err
	}
	up, err := r.read(ctx, in.ContentType, in.FileName, in.RawBody)
	if err != nil {
		return nil, err
	}
	a := up.archive
	ip, err := r.installed(ctx, sc.ws, a.Manifest.Namespace())
	if err != nil {
		return nil, err
	}
	sel, err := r.selections(ctx, sc, a.Manifest.Metadata.Publisher, a.Manifest.Metadata.Name)
	if err != nil {
		return nil, err
	}
	cs, err := r.plan(ctx, sc, a, ip, sel)
	if err != nil {
		return nil, err
	}
	return &previewOutput{Body: PackPreview{Pack: info(a, up.fileName), Source: sourceView(up.source), ChangeSet: cs}}, nil
}

func (r *routes) install(ctx context.Context, in *installInput) (*viewOutput, error) {
	sc, err := r.scope(ctx)
	if err != nil {
		return nil, err
	}
	up, err := r.read(ctx, in.ContentType, in.FileName, in.RawBody)
	if err != nil {
		return nil, err
	}
	a := up.archive
	id := a.Manifest.Namespace()
	ip, err := r.installed(ctx, sc.ws, id)
	if err != nil {
		return nil, err
	}
	if ip != nil {
		if err := busy(ip); err != nil {
			return nil, err
		}
	}
	sel, err := r.selections(ctx, sc, a.Manifest.Metadata.Publisher, a.Manifest.Metadata.Name)
	if err != nil {
		return nil, err
	}
	cs, err := r.plan(ctx, sc, a, ip, sel)
	if err != nil {
		return nil, err
	}
	if err := r.refuse(ctx, sc, cs, in.RemoveDashboardReferences); err != nil {
		return nil, err
	}
	// Everything is checked: now the writes, archive first (the InstalledPack names it).
	s, err := r.store()
	if err != nil {
		return nil, err
	}
	if _, err := s.PutArchive(ctx, up.bytes); err != nil {
		return nil, httpapi.Internal(err)
	}
	if _, err := resourcenamespace.Ensure(ctx, r.Kube(), sc.ws, platformv1.ResourceNamespace(id)); err != nil {
		if errors.Is(err, resourcenamespace.ErrNotFound) {
			// The namespace of an uninstall a moment ago is still being removed.
			p := newProblem(http.StatusConflict, fmt.Sprintf("the namespace of Pack %s is still being removed; retry in a few seconds", id))
			p.Reason = "NamespaceTerminating"
			return nil, p
		}
		return nil, httpapi.Problem(err)
	}
	m := a.Manifest.Metadata
	now := metav1.Now()
	desired := platformv1.InstalledPackDefinition{
		Publisher: platformv1.PackName(m.Publisher), Name: platformv1.PackName(m.Name), Version: platformv1.SemanticVersion(m.Version),
		DisplayName: m.DisplayName, Description: m.Description, Audience: platformv1.PackAudience(m.Audience), Purpose: platformv1.PackPurpose(m.Purpose),
		Source:        up.source,
		ArchiveDigest: a.Digest, Bindings: bindingsOf(a, sel), RemoveDashboardReferences: in.RemoveDashboardReferences, RequestedAt: &now,
	}
	status := http.StatusOK
	if ip == nil {
		status = http.StatusCreated
		ip = &platformv1.InstalledPack{ObjectMeta: metav1.ObjectMeta{Namespace: sc.ws, Name: id}, Definition: desired}
		if err := r.Kube().Create(ctx, ip, client.FieldOwner(httpapi.FieldManager)); err != nil {
			return nil, httpapi.Problem(err)
		}
	} else {
		if ip.Status.InstalledDigest == "" || ip.Status.State == platformv1.PackDegraded {
			status = http.StatusCreated
		}
		if err := r.updateDefinition(ctx, ip, func() { ip.Definition = desired }); err != nil {
			return nil, err
		}
	}
	return r.await(ctx, sc, ip, status)
}

// bindingsOf are the stored selections of the bindings a declares, for its definition.
func bindingsOf(a *pack.Archive, sel map[string]pack.BindingSelection) []platformv1.PackBindingSelection {
	var out []platformv1.PackBindingSelection
	for _, b := range a.Manifest.Definition.Bindings {
		s, ok := sel[b.Name]
		if !ok || s.Name == "" {
			continue
		}
		out = append(out, platformv1.PackBindingSelection{Binding: b.Name, TargetKind: string(b.TargetKind),
			Namespace: platformv1.ResourceNamespace(s.Namespace), Name: platformv1.ResourceName(s.Name)})
	}
	return out
}

// await waits (bounded) for the controller to end the operation of ip's generation: the
// view with status when it ended well, 409 when it was refused or rolled back, 202 while it
// goes on.
func (r *routes) await(ctx context.Context, sc scope, ip *platformv1.InstalledPack, status int) (*viewOutput, error) {
	generation := ip.Generation
	ctx, cancel := context.WithTimeout(ctx, operationWait)
	defer cancel()
	for {
		current := &platformv1.InstalledPack{}
		err := r.Kube().Get(ctx, client.ObjectKeyFromObject(ip), current)
		if err == nil {
			ip = current
			if op := ip.Status.Operation; op != nil && op.Generation == generation {
				switch op.Phase {
				case platformv1.PackOperationDone:
					return r.viewOutput(ctx, sc, ip, status)
				case platformv1.PackOperationFailed:
					msg := op.Error
					if op.FailedResource != "" {
						msg = op.FailedResource + ": " + msg
					}
					p := newProblem(http.StatusConflict, fmt.Sprintf("%s of %s failed and was rolled back: %s", op.Kind, ip.Name, msg))
					p.Reason, p.Path = "OperationFailed", op.FailedResource
					return nil, p
				}
			}
		} else if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			return nil, httpapi.Problem(err)
		}
		select {
		case <-ctx.Done():
			return r.viewOutput(context.WithoutCancel(ctx), sc, ip, http.StatusAccepted)
		case <-time.After(pollInterval):
		}
	}
}

func (r *routes) viewOutput(ctx context.Context, sc scope, ip *platformv1.InstalledPack, status int) (*viewOutput, error) {
	v, err := r.view(ctx, sc, ip)
	if err != nil {
		return nil, err
	}
	return &viewOutput{Status: status, ETag: httpapi.ETag(ip.ResourceVersion), Body: v}, nil
}

var states = map[platformv1.PackInstallState]string{
	platformv1.PackInstalling: "installing", platformv1.PackInstalled: "installed", platformv1.PackRolledBack: "rolled back",
	platformv1.PackDegraded: "degraded", platformv1.PackUninstalling: "uninstalling",
}

var readiness = map[platformv1.PackReadiness]string{
	"Ready": pack.ReadinessReady, "NeedsConfiguration": pack.ReadinessNeedsConfiguration, "MissingRequirement": pack.ReadinessMissingRequirement,
}

// view is ip as the service API shows it.
func (r *routes) view(ctx context.Context, sc scope, ip *platformv1.InstalledPack) (InstalledPackView, error) {
	d := ip.Definition
	// The source of what is installed: the definition's is what an operation is going to.
	source := d.Source
	if s := ip.Status.InstalledSource; s != nil {
		source = *s
	}
	v := InstalledPackView{Publisher: string(d.Publisher), Name: string(d.Name), Version: string(ip.Status.InstalledVersion),
		DisplayName: d.DisplayName, Description: d.Description, Audience: string(d.Audience), Purpose: string(d.Purpose), Namespace: ip.Name,
		Source:          sourceView(source),
		State:           states[ip.Status.State],
		Readiness:       readiness[ip.Status.Readiness],
		RetainedVersion: string(ip.Status.RetainedVersion),
		Bindings:        []pack.BindingState{}, Resources: []ResourceView{}}
	// The digest of what is installed, whatever the record of its source says.
	v.Source.Digest = string(ip.Status.InstalledDigest)
	if v.Version == "" {
		v.Version = string(d.Version)
	}
	if v.State == "" {
		v.State = "installing"
	}
	if t := ip.Status.InstalledAt; t != nil {
		at := t.UTC()
		v.InstalledAt = &at
	}
	kns := resourcenamespace.KubeName(sc.ws, platformv1.ResourceNamespace(ip.Name))
	for _, m := range ip.Status.Resources {
		rv := ResourceView{Kind: string(m.Kind), Name: string(m.Name), Path: m.ArchivePath, Fingerprint: string(m.Fingerprint),
			SuppliedByVersion: string(m.SuppliedByVersion), MatchesInstalled: m.MatchesInstalled, Condition: "managed"}
		// Read live: a change a person made a moment ago shows at once, before the controller
		// recomputed matchesInstalled.
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(platformv1.GroupVersion.WithKind(string(m.Kind)))
		err := r.Kube().Get(ctx, client.ObjectKey{Namespace: kns, Name: string(m.Name)}, live)
		switch {
		case apierrors.IsNotFound(err):
			rv.Condition, rv.MatchesInstalled = "missing", false
		case err != nil:
			return v, httpapi.Problem(err)
		default:
			rv.MatchesInstalled = live.GetLabels()[pack.PackLabel] == ip.Name && pack.Fingerprint(live.Object) == m.Fingerprint
			if !rv.MatchesInstalled {
				rv.Condition = "modified"
			}
		}
		v.Resources = append(v.Resources, rv)
	}
	for _, p := range ip.Status.Preserved {
		v.Preserved = append(v.Preserved, PreservedView{Kind: string(p.Kind), Name: string(p.Name), Reason: p.Reason})
	}
	if op := ip.Status.Operation; op != nil {
		ov := &OperationView{Kind: string(op.Kind), Phase: string(op.Phase), Total: len(op.Steps), FailedResource: op.FailedResource, Error: op.Error}
		for _, s := range op.Steps {
			if s.Done {
				ov.Done++
			}
		}
		v.Operation = ov
	}
	if ip.Status.InstalledDigest != "" && r.Packs() != nil {
		a, err := r.archive(ctx, ip.Status.InstalledDigest)
		var p *problem
		if errors.As(err, &p) && p.Reason == archiveNotStored {
			// The Pack is still shown (and listed); only its bindings' declarations are unknown.
			return v, nil
		}
		if err != nil {
			return v, err
		}
		sel := map[string]pack.BindingSelection{}
		for _, b := range d.Bindings {
			sel[b.Binding] = pack.BindingSelection{Namespace: string(b.Namespace), Name: string(b.Name)}
		}
		if v.Bindings, err = r.bindingStates(ctx, sc, a, sel); err != nil {
			return v, err
		}
	}
	return v, nil
}

func (r *routes) bindingStates(ctx context.Context, sc scope, a *pack.Archive, sel map[string]pack.BindingSelection) ([]pack.BindingState, error) {
	sat, err := installedpack.Satisfied(ctx, r.Kube(), sc.ws, a, sel)
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	out := []pack.BindingState{}
	for _, b := range a.Manifest.Definition.Bindings {
		st := pack.BindingState{BindingDeclaration: b, Satisfied: sat[b.Name]}
		if s, ok := sel[b.Name]; ok && s.Name != "" {
			s := s
			st.Selection = &s
		}
		out = append(out, st)
	}
	return out, nil
}

func (r *routes) list(ctx context.Context) (*listOutput, error) {
	sc, err := r.scope(ctx)
	if err != nil {
		return nil, err
	}
	list := &platformv1.InstalledPackList{}
	if err := r.Kube().List(ctx, list, client.InNamespace(sc.ws), client.Limit(maxListed)); err != nil {
		return nil, httpapi.Problem(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	out := List{Items: []InstalledPackView{}}
	for i := range list.Items {
		v, err := r.view(ctx, sc, &list.Items[i])
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, v)
	}
	return &listOutput{Body: out}, nil
}

func (r *routes) get(ctx context.Context, in *itemInput) (*viewOutput, error) {
	sc, err := r.scope(ctx)
	if err != nil {
		return nil, err
	}
	ip, err := r.mustInstalled(ctx, sc.ws, in)
	if err != nil {
		return nil, err
	}
	return r.viewOutput(ctx, sc, ip, http.StatusOK)
}

func (r *routes) uninstallPreview(ctx context.Context, in *uninstallInput) (*uninstallPreviewOutput, error) {
	sc, err := r.scope(ctx)
	if err != nil {
		return nil, err
	}
	ip, err := r.mustInstalled(ctx, sc.ws, in.item())
	if err != nil {
		return nil, err
	}
	ip.Definition.RemoveDashboardReferences = in.RemoveDashboardReferences
	p, err := installedpack.PlanUninstall(ctx, r.Kube(), ip, resourcenamespace.KubeName(sc.ws, platformv1.ResourceNamespace(ip.Name)))
	if err != nil {
		return nil, httpapi.Problem(err)
	}
	out := UninstallPreview{Remove: []ResourceRef{}, Preserve: []PreservedView{}}
	for _, m := range p.Remove {
		out.Remove = append(out.Remove, ResourceRef{Kind: string(m.Kind), Name: string(m.Name)})
	}
	for _, m := range p.Preserve {
		out.Preserve = append(out.Preserve, PreservedView{Kind: string(m.Kind), Name: string(m.Name), Reason: m.Reason})
	}
	if out.KeptInNamespace, err = installedpack.Remaining(ctx, r.Kube(), resourcenamespace.KubeName(sc.ws, platformv1.ResourceNamespace(ip.Name)), ip.Name); err != nil {
		return nil, httpapi.Problem(err)
	}
	return &uninstallPreviewOutput{Body: out}, nil
}

func (r *routes) uninstall(ctx context.Context, in *uninstallInput) (*uninstallOutput, error) {
	sc, err := r.scope(ctx)
	if err != nil {
		return nil, err
	}
	ip, err := r.mustInstalled(ctx, sc.ws, in.item())
	if err != nil {
		return nil, err
	}
	if err := busy(ip); err != nil {
		return nil, err
	}
	now := metav1.Now()
	if err := r.updateDefinition(ctx, ip, func() {
		ip.Definition.Uninstall, ip.Definition.RemoveDashboardReferences, ip.Definition.RequestedAt = true, in.RemoveDashboardReferences, &now
	}); err != nil {
		return nil, err
	}
	generation := ip.Generation
	wait, cancel := context.WithTimeout(ctx, operationWait)
	defer cancel()
	for {
		current := &platformv1.InstalledPack{}
		err := r.Kube().Get(wait, client.ObjectKeyFromObject(ip), current)
		switch {
		case apierrors.IsNotFound(err):
			out := UninstallResult{State: "removed", Preserved: []PreservedView{}}
			// What keeps the namespace, when something does (the record is gone, its event says it too).
			if _, err := resourcenamespace.Resolve(ctx, r.Kube(), sc.ws, platformv1.ResourceNamespace(ip.Name)); err == nil {
				if out.KeptInNamespace, err = installedpack.Remaining(ctx, r.Kube(), resourcenamespace.KubeName(sc.ws, platformv1.ResourceNamespace(ip.Name)), ip.Name); err != nil {
					return nil, httpapi.Problem(err)
				}
			}
			return &uninstallOutput{Body: out}, nil
		case err == nil:
			if op := current.Status.Operation; op != nil && op.Generation == generation && op.Phase == platformv1.PackOperationDone {
				out := UninstallResult{State: "degraded", Preserved: []PreservedView{}}
				for _, p := range current.Status.Preserved {
					out.Preserved = append(out.Preserved, PreservedView{Kind: string(p.Kind), Name: string(p.Name), Reason: p.Reason})
				}
				return &uninstallOutput{Body: out}, nil
			}
		case wait.Err() == nil:
			return nil, httpapi.Problem(err)
		}
		select {
		case <-wait.Done():
			return &uninstallOutput{Body: UninstallResult{State: "uninstalling", Preserved: []PreservedView{}}}, nil
		case <-time.After(pollInterval):
		}
	}
}

func (r *routes) setBindings(ctx context.Context, in *bindingsInput) (*bindingsOutput, error) {
	sc, err := r.scope(ctx)
	if err != nil {
		return nil, err
	}
	for _, v := range []string{in.Publisher, in.Name} {
		if !validName(v) {
			return nil, httpapi.BodyInvalid("publisher", "a Pack publisher and name are lowercase letters, digits and -")
		}
	}
	ip, err := r.installed(ctx, sc.ws, in.Publisher+"."+in.Name)
	if err != nil {
		return nil, err
	}
	var a *pack.Archive
	if ip != nil && ip.Status.InstalledDigest != "" {
		if a, err = r.archive(ctx, ip.Status.InstalledDigest); err != nil {
			return nil, err
		}
	}
	declared := map[string]pack.BindingDeclaration{}
	if a != nil {
		for _, b := range a.Manifest.Definition.Bindings {
			declared[b.Name] = b
		}
	}
	var stored []packstore.Selection
	names := make([]string, 0, len(in.Body.Bindings))
	for n := range in.Body.Bindings {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := in.Body.Bindings[n]
		if a != nil {
			if _, ok := declared[n]; !ok {
				return nil, httpapi.BodyInvalid("bindings."+n, fmt.Sprintf("Pack %s declares no binding %q", ip.Name, n))
			}
		}
		if s.Namespace == "" {
			s.Namespace = string(platformv1.DefaultResourceNamespace)
		}
		if len(n) > 63 || s.Name == "" || len(s.Name) > 253 || len(s.Namespace) > 127 {
			return nil, httpapi.BodyInvalid("bindings."+n, "a selection names a resource namespace and a name")
		}
		stored = append(stored, packstore.Selection{Binding: n, TargetKind: string(declared[n].TargetKind), Namespace: s.Namespace, Name: s.Name})
	}
	s, err := r.store()
	if err != nil {
		return nil, err
	}
	if err := s.SetBindings(ctx, packstore.Identity{Workspace: sc.ws, Publisher: in.Publisher, Name: in.Name}, stored); err != nil {
		return nil, httpapi.Internal(err)
	}
	sel, err := r.selections(ctx, sc, in.Publisher, in.Name)
	if err != nil {
		return nil, err
	}
	if a == nil {
		out := []pack.BindingState{}
		for _, n := range sortedKeys(sel) {
			s := sel[n]
			out = append(out, pack.BindingState{BindingDeclaration: pack.BindingDeclaration{Name: n}, Selection: &s})
		}
		return &bindingsOutput{Body: BindingsResult{Bindings: out}}, nil
	}
	// An installed Pack is reconciled with the new selections (an update of the same archive).
	now := metav1.Now()
	if err := r.updateDefinition(ctx, ip, func() { ip.Definition.Bindings, ip.Definition.RequestedAt = bindingsOf(a, sel), &now }); err != nil {
		return nil, err
	}
	states, err := r.bindingStates(ctx, sc, a, sel)
	if err != nil {
		return nil, err
	}
	return &bindingsOutput{Body: BindingsResult{Bindings: states}}, nil
}

func sortedKeys(m map[string]pack.BindingSelection) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func validName(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// retained is the retained archive of an installed Pack; 409 when there is none.
func (r *routes) retained(ctx context.Context, ip *platformv1.InstalledPack) (*pack.Archive, error) {
	if ip.Status.RetainedDigest == "" {
		p := newProblem(http.StatusConflict, fmt.Sprintf("Pack %s has no retained version to roll back to", ip.Name))
		p.Reason = "NothingRetained"
		return nil, p
	}
	return r.archive(ctx, ip.Status.RetainedDigest)
}

// retainedSource is where the retained archive of digest came from: the source recorded when
// it was installed; for a record from before that was kept, its kind with no file name (the
// installed version's file name would be a wrong one).
func retainedSource(ip *platformv1.InstalledPack, digest platformv1.Digest) platformv1.PackSource {
	if rs := ip.Status.RetainedSource; rs != nil && rs.Digest == digest {
		return *rs
	}
	return platformv1.PackSource{Kind: ip.Definition.Source.Kind, Digest: digest}
}

// rollbackPlan is what rolling the installed Pack back to its retained version changes: the
// plan that its preview shows and that the rollback carries out.
type rollbackPlan struct {
	sc      scope
	ip      *platformv1.InstalledPack
	archive *pack.Archive
	sel     map[string]pack.BindingSelection
	changes pack.ChangeSet
}

func (r *routes) planRollback(ctx context.Context, in *itemInput, refuseBusy bool) (*rollbackPlan, error) {
	sc, err := r.scope(ctx)
	if err != nil {
		return nil, err
	}
	ip, err := r.mustInstalled(ctx, sc.ws, in)
	if err != nil {
		return nil, err
	}
	if refuseBusy {
		if err := busy(ip); err != nil {
			return nil, err
		}
	}
	a, err := r.retained(ctx, ip)
	if err != nil {
		return nil, err
	}
	sel, err := r.selections(ctx, sc, in.Publisher, in.Name)
	if err != nil {
		return nil, err
	}
	cs, err := r.plan(ctx, sc, a, ip, sel)
	if err != nil {
		return nil, err
	}
	return &rollbackPlan{sc: sc, ip: ip, archive: a, sel: sel, changes: cs}, nil
}

func (r *routes) rollbackPreview(ctx context.Context, in *itemInput) (*previewOutput, error) {
	p, err := r.planRollback(ctx, in, false)
	if err != nil {
		return nil, err
	}
	return &previewOutput{Body: PackPreview{Pack: info(p.archive, retainedSource(p.ip, p.archive.Digest).FileName), Source: sourceView(retainedSource(p.ip, p.archive.Digest)), ChangeSet: p.changes}}, nil
}

func (r *routes) rollback(ctx context.Context, in *rollbackInput) (*viewOutput, error) {
	p, err := r.planRollback(ctx, in.item(), true)
	if err != nil {
		return nil, err
	}
	sc, ip, a, sel, cs := p.sc, p.ip, p.archive, p.sel, p.changes
	if err := r.refuse(ctx, sc, cs, in.RemoveDashboardReferences); err != nil {
		return nil, err
	}
	now := metav1.Now()
	if err := r.updateDefinition(ctx, ip, func() {
		ip.Definition.ArchiveDigest, ip.Definition.Version = a.Digest, platformv1.SemanticVersion(a.Manifest.Metadata.Version)
		ip.Definition.Source, ip.Definition.Bindings = retainedSource(ip, a.Digest), bindingsOf(a, sel)
		ip.Definition.RemoveDashboardReferences, ip.Definition.RequestedAt, ip.Definition.Uninstall = in.RemoveDashboardReferences, &now, false
	}); err != nil {
		return nil, err
	}
	return r.await(ctx, sc, ip, http.StatusOK)
}

// updateDefinition writes change to ip's definition, again on a conflict: the controller writes
// the status of the same object all the time, and a definition the caller did not read is not
// at stake (the checks ran against the state the operation starts from, which only an operation
// changes, and busy refuses a second one).
func (r *routes) updateDefinition(ctx context.Context, ip *platformv1.InstalledPack, change func()) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := r.Kube().Get(ctx, client.ObjectKeyFromObject(ip), ip); err != nil {
			return err
		}
		change()
		return r.Kube().Update(ctx, ip, client.FieldOwner(httpapi.FieldManager))
	})
	return httpapi.Problem(err)
}
