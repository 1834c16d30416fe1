package pack

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Conflict and removal reasons, in sentences a person reads.
const (
	reasonNotOwned       = "exists and is not owned by this Pack"
	reasonChanged        = "changed since installed"
	reasonNoFingerprint  = "owned by this Pack, but its installed content is not known, so a change by a person cannot be ruled out"
	reasonDroppedChanged = "changed since installed, and the new version no longer supplies it"
)

// Plan computes the exact change set of installing in.Archive (or updating in.Installed to it)
// into the installation namespace, from the live objects there. It is pure and deterministic:
// the same input gives the same change set. Each resource of the new archive and of the
// installed one gets exactly one change.
func Plan(in PlanInput) ChangeSet {
	a := in.Archive
	cs := ChangeSet{
		Publisher: a.Manifest.Metadata.Publisher,
		Name:      a.Manifest.Metadata.Name,
		Version:   a.Manifest.Metadata.Version,
		Namespace: a.Manifest.Namespace(),
		Changes:   []Change{},
		Bindings:  []BindingState{},
	}
	if in.Installed != nil && in.Installed.Archive != nil {
		cs.FromVersion = in.Installed.Archive.Manifest.Metadata.Version
	}
	owner := a.Manifest.Namespace()
	live := map[string]*LiveObject{}
	for i := range in.Live {
		l := &in.Live[i]
		live[Key(l.Kind, l.Name)] = l
	}
	installedFingerprint := func(key string, l *LiveObject) (platformv1.Digest, bool) {
		if in.Installed != nil {
			if fp, ok := in.Installed.Fingerprints[key]; ok && fp != "" {
				return fp, true
			}
		}
		// The fingerprint the Pack wrote on the object when it applied it.
		if fp := l.Annotations[FingerprintAnnotation]; fp != "" {
			return platformv1.Digest(fp), true
		}
		return "", false
	}

	inNew := map[string]bool{}
	for _, r := range a.Resources {
		key := Key(r.Kind, r.Name)
		inNew[key] = true
		c := Change{Kind: r.Kind, Name: r.Name, Path: r.Path}
		rendered, err := Render(a, r, "", in.Bindings)
		if err != nil {
			// Render fails only for an object Read would not have returned.
			c.Action, c.Reason = ActionConflict, err.Error()
			cs.Changes = append(cs.Changes, c)
			continue
		}
		want := Fingerprint(rendered.Object)
		l := live[key]
		switch {
		case l == nil:
			c.Action = ActionCreate
		case l.Labels[PackLabel] != owner:
			c.Action, c.Reason = ActionConflict, reasonNotOwned
		default:
			have := l.Fingerprint()
			installed, known := installedFingerprint(key, l)
			switch {
			case have == want:
				c.Action = ActionUnchanged
			case known && have == installed:
				c.Action = ActionUpdate
				c.Diff = Diff(liveContent(l), objectContent(rendered.Object))
			case known:
				c.Action, c.Reason = ActionConflict, reasonChanged
				c.Diff = Diff(liveContent(l), objectContent(rendered.Object))
			default:
				c.Action, c.Reason = ActionConflict, reasonNoFingerprint
			}
		}
		cs.Changes = append(cs.Changes, c)
	}
	var removals []Change
	if in.Installed != nil && in.Installed.Archive != nil {
		for _, r := range in.Installed.Archive.Resources {
			key := Key(r.Kind, r.Name)
			if inNew[key] {
				continue
			}
			inNew[key] = true
			c := Change{Kind: r.Kind, Name: r.Name, Path: r.Path}
			l := live[key]
			switch {
			case l == nil:
				c.Action, c.Reason = ActionRemove, fmt.Sprintf("version %s no longer supplies it; it is already gone", cs.Version)
			case l.Labels[PackLabel] != owner:
				// Detached by a person: no longer the Pack's to remove.
				c.Action, c.Reason = ActionUnchanged, "no longer owned by this Pack; left in place"
			default:
				installed, known := installedFingerprint(key, l)
				if known && l.Fingerprint() == installed {
					c.Action, c.Reason = ActionRemove, fmt.Sprintf("version %s no longer supplies it", cs.Version)
				} else {
					c.Action, c.Reason = ActionConflict, reasonDroppedChanged
				}
			}
			removals = append(removals, c)
		}
	}
	// Removals go last, in the reverse of the install order (dependents before what they use).
	sortResourcesChanges(removals, true)
	cs.Changes = append(cs.Changes, removals...)
	for _, c := range cs.Changes {
		if c.Action == ActionConflict {
			cs.Blocked = true
		}
	}

	// Bindings and readiness.
	needsConfiguration := false
	for _, b := range a.Manifest.Definition.Bindings {
		st := BindingState{BindingDeclaration: b}
		if sel, ok := in.Bindings[b.Name]; ok && sel.Name != "" {
			s := sel
			st.Selection = &s
			if in.Satisfied == nil {
				st.Satisfied = true
			} else {
				st.Satisfied = in.Satisfied[b.Name]
			}
		}
		if b.Required && !st.Satisfied {
			needsConfiguration = true
		}
		cs.Bindings = append(cs.Bindings, st)
	}
	cs.Missing = missing(in)
	switch {
	case len(cs.Missing) > 0:
		cs.Readiness = ReadinessMissingRequirement
	case needsConfiguration:
		cs.Readiness = ReadinessNeedsConfiguration
	default:
		cs.Readiness = ReadinessReady
	}
	return cs
}

// missing lists the references that neither the Pack nor the workspace satisfies: a reference
// without a namespace resolves in the Pack's namespace (the Pack's resources and the live
// objects there); one naming another namespace is asked of in.Exists.
func missing(in PlanInput) []MissingRequirement {
	own := in.Archive.Manifest.Namespace()
	have := map[string]bool{}
	for _, r := range in.Archive.Resources {
		have[Key(r.Kind, r.Name)] = true
	}
	for _, l := range in.Live {
		have[Key(l.Kind, l.Name)] = true
	}
	var out []MissingRequirement
	for _, r := range in.Archive.Resources {
		for _, ref := range r.References {
			var ok bool
			switch {
			case ref.Namespace != "" && ref.Namespace != own:
				ok = in.Exists == nil || in.Exists(ref.Kind, ref.Namespace, ref.Name)
			case ref.Kind == "Secret":
				// Secrets are not among the live Pack kinds; the caller answers for them.
				ok = in.Exists == nil || in.Exists(ref.Kind, own, ref.Name)
			default:
				ok = have[ref.Kind+"/"+ref.Name]
			}
			if !ok {
				out = append(out, MissingRequirement{From: Key(r.Kind, r.Name), Reference: ref})
			}
		}
	}
	return out
}

func liveContent(l *LiveObject) map[string]any {
	return content(l.Definition, l.Labels, l.Annotations)
}

func sortResourcesChanges(cs []Change, reverse bool) {
	rank := map[platformv1.PackResourceKind]int{}
	for i, k := range InstallOrder {
		rank[k] = i
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if rank[cs[i].Kind] != rank[cs[j].Kind] {
			if reverse {
				return rank[cs[i].Kind] > rank[cs[j].Kind]
			}
			return rank[cs[i].Kind] < rank[cs[j].Kind]
		}
		return cs[i].Name < cs[j].Name
	})
}

// Diff lists the fields that differ between two contents (as Fingerprint sees them), by JSON
// path under `definition`, `metadata.labels` and `metadata.annotations`, sorted by path. A list
// is compared item by item.
func Diff(from, to map[string]any) []FieldChange {
	var out []FieldChange
	for _, part := range []struct{ key, path string }{{"definition", "definition"}, {"labels", "metadata.labels"}, {"annotations", "metadata.annotations"}} {
		diffValue(part.path, from[part.key], to[part.key], &out)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func diffValue(path string, from, to any, out *[]FieldChange) {
	fm, fok := asMap(from)
	tm, tok := asMap(to)
	if fok && tok {
		keys := map[string]bool{}
		for k := range fm {
			keys[k] = true
		}
		for k := range tm {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			diffValue(childPath(path, k), fm[k], tm[k], out)
		}
		return
	}
	fl, fok := from.([]any)
	tl, tok := to.([]any)
	if fok && tok {
		for i := 0; i < max(len(fl), len(tl)); i++ {
			var f, t any
			if i < len(fl) {
				f = fl[i]
			}
			if i < len(tl) {
				t = tl[i]
			}
			diffValue(path+"["+strconv.Itoa(i)+"]", f, t, out)
		}
		return
	}
	if !equalJSON(from, to) {
		*out = append(*out, FieldChange{Path: path, From: from, To: to})
	}
}

func asMap(v any) (map[string]any, bool) {
	switch t := v.(type) {
	case map[string]any:
		return t, true
	case map[string]string:
		m := make(map[string]any, len(t))
		for k, s := range t {
			m[k] = s
		}
		return m, true
	}
	return nil, false
}

// childPath appends a key: `.key` when it is a plain identifier, `["key"]` otherwise (label
// keys hold dots and slashes).
func childPath(path, k string) string {
	plain := k != ""
	for _, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return path + "." + k
	}
	return path + "[" + strconv.Quote(k) + "]"
}

// equalJSON compares two JSON values, with int64 and float64 of the same number equal.
func equalJSON(a, b any) bool {
	if fa, ok := number(a); ok {
		if fb, ok := number(b); ok {
			return fa == fb
		}
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	case int32:
		return float64(n), true
	}
	return 0, false
}
