package pack

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

var genNames = []string{"a", "b", "c", "d"}

// genObject is a valid object of kind, its references drawn from the same small name pool so
// that Packs, installed versions and live states overlap.
func genObject(rng *rand.Rand, kind platformv1.PackResourceKind, name string, withBinding bool) map[string]any {
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	display := pick([]string{"One", "Two", "Three"})
	var def map[string]any
	switch kind {
	case "ModelProvider":
		def = map[string]any{"type": "Deterministic", "displayName": display}
	case "ModelProfile":
		def = map[string]any{"displayName": display, "provider": map[string]any{"name": pick(genNames)}, "modelId": "deterministic"}
	case "Agent":
		def = map[string]any{"displayName": display, "handler": "chat"}
		switch {
		case withBinding && rng.IntN(2) == 0:
			def["modelProfile"] = map[string]any{"binding": "model"}
		case rng.IntN(2) == 0:
			def["modelProfile"] = map[string]any{"name": pick(genNames)}
		}
	case "Flow":
		def = map[string]any{"flowKind": "Direct", "displayName": display, "target": map[string]any{"kind": "Agent", "id": pick(genNames)}}
	case "Entry":
		def = map[string]any{"displayName": display, "type": "Prompt", "binding": map[string]any{"agent": map[string]any{"name": pick(genNames)}},
			"fields": []any{map[string]any{"name": "q", "label": "Q", "type": "Text", "role": "PrimaryInput"}}}
	}
	md := map[string]any{"name": name}
	if rng.IntN(3) == 0 {
		md["tags"] = map[string]any{"team": pick([]string{"x", "y"})}
	}
	return map[string]any{"apiVersion": "platform/v1", "kind": string(kind), "metadata": md, "definition": def}
}

var genKinds = []platformv1.PackResourceKind{"ModelProvider", "ModelProfile", "Agent", "Flow", "Entry"}

// genPack writes and reads a random Pack of publisher gen, name p.
func genPack(t testing.TB, rng *rand.Rand, version string) *Archive {
	t.Helper()
	withBinding := rng.IntN(2) == 0
	m := Manifest{Metadata: ManifestMetadata{Publisher: "gen", Name: "p", Version: version}}
	if withBinding {
		m.Definition.Bindings = []BindingDeclaration{{Name: "model", TargetKind: ModelProfileBinding, Required: rng.IntN(2) == 0}}
	}
	var files []File
	for _, k := range genKinds {
		for _, n := range genNames {
			if rng.IntN(3) == 0 {
				files = append(files, File{Path: fmt.Sprintf("%s/%s.yaml", k, n), Object: genObject(rng, k, n, withBinding)})
			}
		}
	}
	if len(files) == 0 {
		files = append(files, File{Path: "Agent/a.yaml", Object: genObject(rng, "Agent", "a", false)})
	}
	b, err := Write(m, "", files)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Read(b, "")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// genLive is a live state for a Pack and its installed version: each resource absent, as the
// installed version rendered it, edited by a person, detached, or someone else's.
func genLive(t testing.TB, rng *rand.Rand, installed, next *Archive) []LiveObject {
	var live []LiveObject
	seen := map[string]bool{}
	add := func(a *Archive, r Resource) {
		key := Key(r.Kind, r.Name)
		if seen[key] {
			return
		}
		seen[key] = true
		var l LiveObject
		switch rng.IntN(6) {
		case 0:
			return
		case 1:
			l = LiveObject{Kind: r.Kind, Name: r.Name, Definition: map[string]any{"displayName": "someone else's"}}
		case 2:
			l = LiveObject{Kind: r.Kind, Name: r.Name, Labels: map[string]string{PackLabel: "other.pack"}}
		default:
			u, err := Render(a, r, "ws", nil)
			if err != nil {
				t.Fatal(err)
			}
			l = LiveFrom(u)
			if rng.IntN(3) == 0 {
				l.Definition["displayName"] = "edited"
			}
			if rng.IntN(5) == 0 {
				delete(l.Labels, PackLabel)
			}
		}
		live = append(live, l)
	}
	if installed != nil {
		for _, r := range installed.Resources {
			add(installed, r)
		}
	}
	for _, r := range next.Resources {
		add(next, r)
	}
	return live
}

// TestPlanIsDeterministicAndPartitionsTheUnionOfArchiveAndInstalledResources: for 200
// generated Packs against generated live states, the same input (in any live order) gives the
// same change set, every resource of the new and the installed archive has exactly one change,
// and the plan is blocked exactly when one change is a conflict.
func TestPlanIsDeterministicAndPartitionsTheUnionOfArchiveAndInstalledResources(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 2026))
	actions := map[Action]bool{ActionCreate: true, ActionUpdate: true, ActionUnchanged: true, ActionConflict: true, ActionRemove: true}
	seenActions := map[Action]int{}
	for i := range 200 {
		next := genPack(t, rng, "2.0.0")
		var rec *Installed
		var installed *Archive
		if rng.IntN(3) > 0 {
			installed = genPack(t, rng, "1.0.0")
			rec = &Installed{Archive: installed, Fingerprints: map[string]platformv1.Digest{}}
			for _, r := range installed.Resources {
				if rng.IntN(4) > 0 {
					u, _ := Render(installed, r, "ws", nil)
					rec.Fingerprints[Key(r.Kind, r.Name)] = Fingerprint(u.Object)
				}
			}
		}
		live := genLive(t, rng, installed, next)
		var bindings map[string]BindingSelection
		if rng.IntN(2) == 0 {
			bindings = map[string]BindingSelection{"model": {Namespace: "default", Name: "m"}}
		}
		in := PlanInput{Archive: next, Live: live, Installed: rec, Bindings: bindings}
		first := Plan(in)

		shuffled := append([]LiveObject(nil), live...)
		rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		in.Live = shuffled
		if second := Plan(in); !reflect.DeepEqual(first, second) {
			t.Fatalf("case %d: the same input planned twice differs:\n%+v\n%+v", i, first, second)
		}

		union := map[string]bool{}
		for _, r := range next.Resources {
			union[Key(r.Kind, r.Name)] = true
		}
		if installed != nil {
			for _, r := range installed.Resources {
				union[Key(r.Kind, r.Name)] = true
			}
		}
		got := map[string]int{}
		blocked := false
		for _, c := range first.Changes {
			got[Key(c.Kind, c.Name)]++
			seenActions[c.Action]++
			if !actions[c.Action] {
				t.Fatalf("case %d: unknown action %q", i, c.Action)
			}
			if c.Action == ActionConflict {
				blocked = true
			}
			if c.Action == ActionRemove && installed == nil {
				t.Fatalf("case %d: an install removes %s", i, Key(c.Kind, c.Name))
			}
		}
		for key := range union {
			if got[key] != 1 {
				t.Fatalf("case %d: %s has %d changes, not exactly one: %+v", i, key, got[key], first.Changes)
			}
		}
		if len(got) != len(union) {
			t.Fatalf("case %d: changes for resources outside the archives: %+v", i, got)
		}
		if blocked != first.Blocked {
			t.Fatalf("case %d: blocked %v with conflicts %v", i, first.Blocked, blocked)
		}
	}
	for a := range actions {
		if seenActions[a] == 0 {
			t.Errorf("the generated cases never plan %q: the generator is too narrow", a)
		}
	}
	t.Logf("actions planned: %v", seenActions)
}
