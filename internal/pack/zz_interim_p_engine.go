package pack

// INTERIM (p-engine): a small stand-in for Read, Render, Fingerprint and Plan, written against
// the signatures of the shared contract so that the installer compiles and its tests run before
// p-archive's implementation lands. Delete this file when merging p-archive.

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Ownership marks (contract: Render).
const (
	PackLabel             = "platform/pack"
	VersionAnnotation     = "platform/pack-version"
	FingerprintAnnotation = "platform/pack-fingerprint"
)

// LiveObject is an object found in the installation namespace.
type LiveObject struct {
	Kind        platformv1.PackResourceKind
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	Definition  map[string]any
}

// InstalledRecord is what an update starts from.
type InstalledRecord struct {
	Archive *Archive
	// Fingerprints of the managed resources as installed, by "Kind/name".
	Fingerprints map[string]platformv1.Digest
}

// PlanInput is what Plan needs.
type PlanInput struct {
	Archive   *Archive
	Namespace string
	Bindings  map[string]BindingSelection
	Satisfied map[string]bool
	Live      []LiveObject
	Installed *InstalledRecord
}

// Identity is `publisher.name`.
func (a *Archive) Identity() string {
	return a.Manifest.Metadata.Publisher + "." + a.Manifest.Metadata.Name
}

// Read reads and validates an archive (interim: the essentials).
func Read(data []byte, fileName string) (*Archive, error) {
	if len(data) > MaxCompressedBytes {
		return nil, &Error{Reason: ReasonTooLarge}
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, &Error{Reason: ReasonNotZip, Detail: err.Error()}
	}
	if len(zr.File) > MaxFiles {
		return nil, &Error{Reason: ReasonTooManyFiles}
	}
	files := map[string][]byte{}
	var total int64
	for _, f := range zr.File {
		name := f.Name
		switch {
		case strings.HasPrefix(name, "/"):
			return nil, &Error{Reason: ReasonAbsolutePath, Path: name}
		case strings.Contains(name, "\\"):
			return nil, &Error{Reason: ReasonBackslash, Path: name}
		case strings.Contains("/"+name+"/", "/../"):
			return nil, &Error{Reason: ReasonParentTraversal, Path: name}
		case f.Mode()&0o170000 == 0o120000:
			return nil, &Error{Reason: ReasonLink, Path: name}
		}
		if strings.HasSuffix(name, "/") {
			continue
		}
		if _, dup := files[name]; dup {
			return nil, &Error{Reason: ReasonDuplicatePath, Path: name}
		}
		rc, err := f.Open()
		if err != nil {
			return nil, &Error{Reason: ReasonNotZip, Path: name, Detail: err.Error()}
		}
		b, err := io.ReadAll(io.LimitReader(rc, MaxFileExpandedBytes+1))
		rc.Close()
		if err != nil {
			return nil, &Error{Reason: ReasonNotZip, Path: name, Detail: err.Error()}
		}
		if len(b) > MaxFileExpandedBytes {
			return nil, &Error{Reason: ReasonFileTooLarge, Path: name}
		}
		if total += int64(len(b)); total > MaxExpandedBytes {
			return nil, &Error{Reason: ReasonExpandedTooLarge}
		}
		files[name] = b
	}
	raw, ok := files[ManifestFile]
	if !ok {
		return nil, &Error{Reason: ReasonMissingManifest, Path: ManifestFile}
	}
	a := &Archive{Digest: digestOf(data)}
	if err := yaml.UnmarshalStrict(raw, &a.Manifest); err != nil {
		return nil, &Error{Reason: ReasonInvalidManifest, Path: ManifestFile, Detail: err.Error()}
	}
	m := &a.Manifest
	if m.Metadata.Name == "" || m.Metadata.Publisher == "" || m.Metadata.Version == "" {
		return nil, &Error{Reason: ReasonInvalidManifest, Path: ManifestFile, Field: "metadata", Detail: "name, publisher and version are required"}
	}
	if m.Metadata.Audience == "" {
		m.Metadata.Audience = "universal"
	}
	if m.Metadata.Purpose == "" {
		m.Metadata.Purpose = "standard"
	}
	if len(m.Definition.Requirements) > 0 {
		return nil, &Error{Reason: ReasonRequirements, Path: ManifestFile, Field: "definition.requirements"}
	}
	for _, n := range []string{"README.md", "README"} {
		if b, ok := files[n]; ok {
			a.Readme = string(b)
			break
		}
	}
	declared := map[string]bool{}
	for _, b := range m.Definition.Bindings {
		declared[b.Name] = true
	}
	listed := map[string]bool{ManifestFile: true, "README.md": true, "README": true}
	seen := map[string]bool{}
	for i, p := range m.Definition.Resources {
		p = path.Clean(p)
		listed[p] = true
		b, ok := files[p]
		if !ok {
			return nil, &Error{Reason: ReasonMissingEntry, Path: p, Field: fmt.Sprintf("definition.resources[%d]", i)}
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal(b, &obj); err != nil {
			return nil, &Error{Reason: ReasonInvalidResource, Path: p, Detail: err.Error()}
		}
		kind, _ := obj["kind"].(string)
		if !isPackKind(kind) {
			return nil, &Error{Reason: ReasonUnsupportedKind, Path: p, Field: "kind", Detail: kind}
		}
		md, _ := obj["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		if name == "" {
			return nil, &Error{Reason: ReasonInvalidResource, Path: p, Field: "metadata.name"}
		}
		if _, ok := obj["definition"].(map[string]any); !ok {
			return nil, &Error{Reason: ReasonInvalidResource, Path: p, Field: "definition"}
		}
		if seen[kind+"/"+name] {
			return nil, &Error{Reason: ReasonDuplicateResource, Path: p}
		}
		seen[kind+"/"+name] = true
		obj["apiVersion"] = "platform.dev/v1"
		delete(md, "namespace")
		r := Resource{Path: p, Kind: platformv1.PackResourceKind(kind), Name: name, Object: obj}
		walkBindings(obj["definition"], func(m map[string]any, b string) { r.Bindings = append(r.Bindings, b) })
		for _, b := range r.Bindings {
			if !declared[b] {
				return nil, &Error{Reason: ReasonUnknownBinding, Path: p, Detail: b}
			}
		}
		a.Resources = append(a.Resources, r)
	}
	for n := range files {
		if !listed[n] {
			return nil, &Error{Reason: ReasonUnlistedEntry, Path: n}
		}
	}
	sort.SliceStable(a.Resources, func(i, j int) bool {
		oi, oj := kindOrder(a.Resources[i].Kind), kindOrder(a.Resources[j].Kind)
		if oi != oj {
			return oi < oj
		}
		return a.Resources[i].Name < a.Resources[j].Name
	})
	return a, nil
}

func digestOf(b []byte) platformv1.Digest {
	sum := sha256.Sum256(b)
	return platformv1.Digest("sha256:" + hex.EncodeToString(sum[:]))
}

func isPackKind(k string) bool { return kindOrder(platformv1.PackResourceKind(k)) < len(InstallOrder) }

func kindOrder(k platformv1.PackResourceKind) int {
	for i, o := range InstallOrder {
		if o == k {
			return i
		}
	}
	return len(InstallOrder)
}

// walkBindings calls fn on every `{binding: <name>}` map under v.
func walkBindings(v any, fn func(m map[string]any, binding string)) {
	switch t := v.(type) {
	case map[string]any:
		if b, ok := t["binding"].(string); ok && len(t) == 1 {
			fn(t, b)
			return
		}
		for _, c := range t {
			walkBindings(c, fn)
		}
	case []any:
		for _, c := range t {
			walkBindings(c, fn)
		}
	}
}

// Render is the object to apply into kube namespace namespace.
func Render(a *Archive, r Resource, namespace string, bindings map[string]BindingSelection) (*unstructured.Unstructured, error) {
	obj := deepCopyJSON(r.Object).(map[string]any)
	def := obj["definition"].(map[string]any)
	var replace func(v any) any
	replace = func(v any) any {
		switch t := v.(type) {
		case map[string]any:
			for k, c := range t {
				if m, ok := c.(map[string]any); ok {
					if b, ok := m["binding"].(string); ok && len(m) == 1 {
						if sel, ok := bindings[b]; ok && sel.Name != "" {
							t[k] = map[string]any{"name": sel.Name}
						} else {
							delete(t, k)
						}
						continue
					}
				}
				t[k] = replace(c)
			}
		case []any:
			for i, c := range t {
				t[i] = replace(c)
			}
		}
		return v
	}
	replace(def)
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(namespace)
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[PackLabel] = a.Identity()
	u.SetLabels(labels)
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[VersionAnnotation] = a.Manifest.Metadata.Version
	u.SetAnnotations(ann)
	ann[FingerprintAnnotation] = string(Fingerprint(u.Object))
	u.SetAnnotations(ann)
	return u, nil
}

func deepCopyJSON(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// Fingerprint is the digest of what a person can change.
func Fingerprint(obj map[string]any) platformv1.Digest {
	u := unstructured.Unstructured{Object: obj}
	keep := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if !strings.HasPrefix(k, "platform/") && !strings.Contains(k, "kubernetes.io/") {
				out[k] = v
			}
		}
		return out
	}
	b, _ := json.Marshal(map[string]any{"definition": obj["definition"], "labels": keep(u.GetLabels()), "annotations": keep(u.GetAnnotations())})
	return digestOf(b)
}

func liveFingerprint(l LiveObject) platformv1.Digest {
	labels := map[string]any{}
	for k, v := range l.Labels {
		labels[k] = v
	}
	ann := map[string]any{}
	for k, v := range l.Annotations {
		ann[k] = v
	}
	return Fingerprint(map[string]any{"definition": l.Definition, "metadata": map[string]any{"labels": labels, "annotations": ann}})
}

// Plan computes the change set.
func Plan(in PlanInput) ChangeSet {
	a := in.Archive
	cs := ChangeSet{Publisher: a.Manifest.Metadata.Publisher, Name: a.Manifest.Metadata.Name, Version: a.Manifest.Metadata.Version,
		Namespace: a.Identity(), Changes: []Change{}, Bindings: []BindingState{}}
	if in.Installed != nil && in.Installed.Archive != nil {
		cs.FromVersion = in.Installed.Archive.Manifest.Metadata.Version
	}
	live := map[string]LiveObject{}
	for _, l := range in.Live {
		live[string(l.Kind)+"/"+l.Name] = l
	}
	installedFP := func(key string) (platformv1.Digest, bool) {
		if in.Installed == nil {
			return "", false
		}
		d, ok := in.Installed.Fingerprints[key]
		return d, ok
	}
	supplied := map[string]bool{}
	for _, r := range a.Resources {
		key := string(r.Kind) + "/" + r.Name
		supplied[key] = true
		c := Change{Kind: r.Kind, Name: r.Name, Path: r.Path}
		want, _ := Render(a, r, "", in.Bindings)
		wantFP := Fingerprint(want.Object)
		l, exists := live[key]
		switch {
		case !exists:
			c.Action = ActionCreate
		case l.Labels[PackLabel] != a.Identity():
			c.Action, c.Reason = ActionConflict, "exists and is not owned by this Pack"
		default:
			fp := liveFingerprint(l)
			inst, hasInst := installedFP(key)
			switch {
			case l.Annotations[FingerprintAnnotation] == string(wantFP) && (!hasInst || fp == inst):
				c.Action = ActionUnchanged
			case hasInst && fp == inst, !hasInst && in.Installed == nil:
				c.Action = ActionUpdate
				wd, _ := want.Object["definition"].(map[string]any)
				c.Diff = diff("definition", l.Definition, wd)
			default:
				c.Action, c.Reason = ActionConflict, "changed since installed"
			}
		}
		cs.Changes = append(cs.Changes, c)
	}
	if in.Installed != nil && in.Installed.Archive != nil {
		old := in.Installed.Archive.Resources
		for i := len(old) - 1; i >= 0; i-- {
			r := old[i]
			key := string(r.Kind) + "/" + r.Name
			if supplied[key] {
				continue
			}
			c := Change{Kind: r.Kind, Name: r.Name, Path: r.Path, Action: ActionRemove, Reason: "not supplied by the new version"}
			if l, ok := live[key]; ok {
				if inst, ok := installedFP(key); ok && liveFingerprint(l) != inst {
					c.Action, c.Reason = ActionConflict, "changed since installed"
				}
			}
			cs.Changes = append(cs.Changes, c)
		}
	}
	cs.Readiness = ReadinessReady
	for _, b := range a.Manifest.Definition.Bindings {
		st := BindingState{BindingDeclaration: b, Satisfied: in.Satisfied[b.Name]}
		if sel, ok := in.Bindings[b.Name]; ok {
			s := sel
			st.Selection = &s
		}
		if b.Required && !st.Satisfied {
			cs.Readiness = ReadinessNeedsConfiguration
		}
		cs.Bindings = append(cs.Bindings, st)
	}
	for _, c := range cs.Changes {
		if c.Action == ActionConflict {
			cs.Blocked = true
		}
	}
	return cs
}

func diff(p string, from, to any) []FieldChange {
	fm, okf := from.(map[string]any)
	tm, okt := to.(map[string]any)
	if okf && okt {
		keys := map[string]bool{}
		for k := range fm {
			keys[k] = true
		}
		for k := range tm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		var out []FieldChange
		for _, k := range sorted {
			out = append(out, diff(p+"."+k, fm[k], tm[k])...)
		}
		return out
	}
	if reflect.DeepEqual(deepCopyJSON(from), deepCopyJSON(to)) {
		return nil
	}
	return []FieldChange{{Path: p, From: from, To: to}}
}
