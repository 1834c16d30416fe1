package pack

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

// FuzzRead: whatever the bytes, Read never panics, refuses with a *Error, and what it accepts
// keeps to the limits and the path rules.
func FuzzRead(f *testing.F) {
	f.Add(zipEntries(f, dirEntries(f, helloPackDir)...))
	f.Add(zipEntries(f, tiny()...))
	f.Add(zipEntries(f, tiny(entry{name: "a/../../x", body: "x"})...))
	f.Add(zipEntries(f, tiny(entry{name: "l", body: "/etc", mode: fs.ModeSymlink | 0o777})...))
	f.Add(zipEntries(f, oneResource(agentA+"  modelProfile:\n    binding: m\n")...))
	f.Add(zipEntries(f, entry{name: "pack.yaml", body: withBindings(packYAML("resources/r.yaml"), "  - name: m\n    targetKind: modelProfile\n")}, entry{name: "resources/r.yaml", body: agentA + "  modelProfile:\n    binding: m\n"}))
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Read(data, "fuzz.zip")
		if err != nil {
			var perr *Error
			if !errors.As(err, &perr) || perr.Reason == "" {
				t.Fatalf("a refusal without a reason: %v", err)
			}
			return
		}
		if len(a.Resources) == 0 || len(a.Resources) > MaxFiles {
			t.Fatalf("%d resources accepted", len(a.Resources))
		}
		total := len(a.Readme)
		for _, r := range a.Resources {
			if e := checkPath(r.Path); e != nil {
				t.Fatalf("accepted path %q: %v", r.Path, e)
			}
			total += len(fmt.Sprint(r.Object))
			if _, err := Render(a, r, "ns", nil); err != nil {
				t.Fatalf("an accepted resource does not render: %v", err)
			}
		}
		if len(a.Readme) > MaxFileExpandedBytes {
			t.Fatalf("README of %d bytes", len(a.Readme))
		}
		Plan(PlanInput{Archive: a})
	})
}

// BenchmarkReadAndPlan100Resources reads a 100-resource Pack (Agents, Flows and Entries
// referring to each other) and plans its install against a namespace where half of them are
// installed already.
func BenchmarkReadAndPlan100Resources(b *testing.B) {
	m := Manifest{Metadata: ManifestMetadata{Publisher: "bench", Name: "hundred", Version: "1.0.0"}}
	var files []File
	for i := range 34 {
		n := fmt.Sprintf("r%02d", i)
		files = append(files,
			File{Path: "agents/" + n + ".yaml", Object: map[string]any{"apiVersion": "platform/v1", "kind": "Agent", "metadata": map[string]any{"name": n},
				"definition": map[string]any{"displayName": "Agent " + n, "handler": "chat", "instructions": strings.Repeat("Be helpful. ", 40)}}},
			File{Path: "flows/" + n + ".yaml", Object: map[string]any{"apiVersion": "platform/v1", "kind": "Flow", "metadata": map[string]any{"name": n},
				"definition": map[string]any{"flowKind": "Direct", "displayName": "Flow " + n, "target": map[string]any{"kind": "Agent", "id": n}}}})
		if i < 32 {
			files = append(files, File{Path: "entries/" + n + ".yaml", Object: map[string]any{"apiVersion": "platform/v1", "kind": "Entry", "metadata": map[string]any{"name": n},
				"definition": map[string]any{"displayName": "Entry " + n, "type": "Prompt", "binding": map[string]any{"flow": map[string]any{"name": n}},
					"fields": []any{map[string]any{"name": "q", "label": "Question", "type": "MultilineText", "role": "PrimaryInput"}}}}})
		}
	}
	data, err := Write(m, "# Hundred\n", files)
	if err != nil {
		b.Fatal(err)
	}
	a, err := Read(data, "")
	if err != nil {
		b.Fatal(err)
	}
	if len(a.Resources) != 100 {
		b.Fatalf("%d resources", len(a.Resources))
	}
	var live []LiveObject
	for i, r := range a.Resources {
		if i%2 == 0 {
			u, _ := Render(a, r, "ws", nil)
			live = append(live, LiveFrom(u))
		}
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		a, err := Read(data, "hundred.zip")
		if err != nil {
			b.Fatal(err)
		}
		cs := Plan(PlanInput{Archive: a, Live: live})
		if len(cs.Changes) != 100 || cs.Blocked {
			b.Fatalf("%d changes, blocked %v", len(cs.Changes), cs.Blocked)
		}
	}
}
