package pack

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// installedState is what the server holds after a install of a: each object as rendered, and
// the installed record.
func installedState(t testing.TB, a *Archive, bindings map[string]BindingSelection) ([]LiveObject, *Installed) {
	t.Helper()
	rec := &Installed{Archive: a, Fingerprints: map[string]platformv1.Digest{}}
	var live []LiveObject
	for _, r := range a.Resources {
		u, err := Render(a, r, "ws-1", bindings)
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, LiveFrom(u))
		rec.Fingerprints[Key(r.Kind, r.Name)] = Fingerprint(u.Object)
	}
	return live, rec
}

// helloV2 is hello-pack 1.1.0: the greeter's instructions changed, the translator dropped.
func helloV2(t testing.TB) *Archive {
	t.Helper()
	es := helloEntries(t)
	for i := range es {
		switch es[i].name {
		case "pack.yaml":
			es[i].body = strings.Replace(strings.Replace(es[i].body, "version: 1.0.0", "version: 1.1.0", 1), "  - agents/translator.yaml\n", "", 1)
		case "agents/greeter.yaml":
			es[i].body = strings.Replace(es[i].body, "Greet the person warmly", "Greet the person briefly", 1)
		}
	}
	var kept []entry
	for _, e := range es {
		if e.name != "agents/translator.yaml" {
			kept = append(kept, e)
		}
	}
	a, err := Read(zipEntries(t, kept...), "hello-pack-1.1.0.zip")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func changeOf(cs ChangeSet, key string) Change {
	for _, c := range cs.Changes {
		if Key(c.Kind, c.Name) == key {
			return c
		}
	}
	return Change{}
}

func find(live []LiveObject, key string) *LiveObject {
	for i := range live {
		if Key(live[i].Kind, live[i].Name) == key {
			return &live[i]
		}
	}
	return nil
}

func TestPlanRules(t *testing.T) {
	cases := map[string]struct {
		plan   func(t *testing.T) ChangeSet
		key    string
		action Action
		reason string
		diff   []string
	}{
		"an absent resource is created": {
			plan: func(t *testing.T) ChangeSet { return Plan(PlanInput{Archive: helloArchive(t)}) },
			key:  "Agent/greeter", action: ActionCreate,
		},
		"a foreign resource of the same name is a conflict": {
			plan: func(t *testing.T) ChangeSet {
				live := []LiveObject{{Kind: "Agent", Name: "greeter", Definition: map[string]any{"displayName": "Mine"}}}
				return Plan(PlanInput{Archive: helloArchive(t), Live: live})
			},
			key: "Agent/greeter", action: ActionConflict, reason: "exists and is not owned by this Pack",
		},
		"a resource of the same name owned by another Pack is a conflict": {
			plan: func(t *testing.T) ChangeSet {
				live := []LiveObject{{Kind: "Agent", Name: "greeter", Labels: map[string]string{PackLabel: "other.pack"}}}
				return Plan(PlanInput{Archive: helloArchive(t), Live: live})
			},
			key: "Agent/greeter", action: ActionConflict, reason: "exists and is not owned by this Pack",
		},
		"an owned resource with the new content is unchanged": {
			plan: func(t *testing.T) ChangeSet {
				a := helloArchive(t)
				live, rec := installedState(t, a, nil)
				return Plan(PlanInput{Archive: a, Live: live, Installed: rec})
			},
			key: "Agent/greeter", action: ActionUnchanged,
		},
		"an owned unchanged resource with new content is an update with a field diff": {
			plan: func(t *testing.T) ChangeSet {
				live, rec := installedState(t, helloArchive(t), nil)
				return Plan(PlanInput{Archive: helloV2(t), Live: live, Installed: rec})
			},
			key: "Agent/greeter", action: ActionUpdate, diff: []string{"definition.instructions"},
		},
		"a person's edit is a conflict, never overwritten": {
			plan: func(t *testing.T) ChangeSet {
				live, rec := installedState(t, helloArchive(t), nil)
				find(live, "Agent/greeter").Definition["displayName"] = "Edited by Ada"
				return Plan(PlanInput{Archive: helloV2(t), Live: live, Installed: rec})
			},
			key: "Agent/greeter", action: ActionConflict, reason: "changed since installed", diff: []string{"definition.displayName", "definition.instructions"},
		},
		"a person's label is an edit too": {
			plan: func(t *testing.T) ChangeSet {
				live, rec := installedState(t, helloArchive(t), nil)
				find(live, "Agent/greeter").Labels["team"] = "support"
				return Plan(PlanInput{Archive: helloV2(t), Live: live, Installed: rec})
			},
			key: "Agent/greeter", action: ActionConflict, reason: "changed since installed", diff: []string{"definition.instructions", "metadata.labels.team"},
		},
		"a person's edit that the new version makes too is unchanged": {
			plan: func(t *testing.T) ChangeSet {
				live, rec := installedState(t, helloArchive(t), nil)
				g := find(live, "Agent/greeter")
				g.Definition["instructions"] = strings.Replace(g.Definition["instructions"].(string), "warmly", "briefly", 1)
				return Plan(PlanInput{Archive: helloV2(t), Live: live, Installed: rec})
			},
			key: "Agent/greeter", action: ActionUnchanged,
		},
		"without an installed record the object's own fingerprint annotation tells an edit": {
			plan: func(t *testing.T) ChangeSet {
				live, _ := installedState(t, helloArchive(t), nil)
				find(live, "Agent/greeter").Definition["displayName"] = "Edited"
				return Plan(PlanInput{Archive: helloV2(t), Live: live})
			},
			key: "Agent/greeter", action: ActionConflict, reason: "changed since installed", diff: []string{"definition.displayName", "definition.instructions"},
		},
		"a resource the new version drops is removed": {
			plan: func(t *testing.T) ChangeSet {
				live, rec := installedState(t, helloArchive(t), nil)
				return Plan(PlanInput{Archive: helloV2(t), Live: live, Installed: rec})
			},
			key: "Agent/translator", action: ActionRemove, reason: "version 1.1.0 no longer supplies it",
		},
		"a dropped resource a person changed is a conflict": {
			plan: func(t *testing.T) ChangeSet {
				live, rec := installedState(t, helloArchive(t), nil)
				find(live, "Agent/translator").Definition["displayName"] = "Mine now"
				return Plan(PlanInput{Archive: helloV2(t), Live: live, Installed: rec})
			},
			key: "Agent/translator", action: ActionConflict, reason: "changed since installed, and the new version no longer supplies it",
		},
		"a dropped resource a person detached is left in place": {
			plan: func(t *testing.T) ChangeSet {
				live, rec := installedState(t, helloArchive(t), nil)
				delete(find(live, "Agent/translator").Labels, PackLabel)
				return Plan(PlanInput{Archive: helloV2(t), Live: live, Installed: rec})
			},
			key: "Agent/translator", action: ActionUnchanged, reason: "no longer owned by this Pack; left in place",
		},
		"a deleted managed resource is created again": {
			plan: func(t *testing.T) ChangeSet {
				live, rec := installedState(t, helloArchive(t), nil)
				var kept []LiveObject
				for _, l := range live {
					if l.Name != "greeter" || l.Kind != "Agent" {
						kept = append(kept, l)
					}
				}
				return Plan(PlanInput{Archive: helloV2(t), Live: kept, Installed: rec})
			},
			key: "Agent/greeter", action: ActionCreate,
		},
		"a new binding selection is an update of the Agent that uses it": {
			plan: func(t *testing.T) ChangeSet {
				a := helloArchive(t)
				live, rec := installedState(t, a, nil)
				return Plan(PlanInput{Archive: a, Live: live, Installed: rec, Bindings: map[string]BindingSelection{"translation-model": {Namespace: "default", Name: "gpt"}}})
			},
			key: "Agent/translator", action: ActionUpdate, diff: []string{"definition.modelProfile"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			cs := c.plan(t)
			ch := changeOf(cs, c.key)
			g.Expect(ch.Action).To(Equal(c.action), "%+v", ch)
			g.Expect(ch.Reason).To(Equal(c.reason))
			var paths []string
			for _, d := range ch.Diff {
				paths = append(paths, d.Path)
			}
			g.Expect(paths).To(Equal(c.diff))
			g.Expect(cs.Blocked).To(Equal(c.action == ActionConflict), "any conflict blocks; none here but this one")
		})
	}
}

func TestPlanDiffSaysFromAndTo(t *testing.T) {
	g := NewWithT(t)
	live, rec := installedState(t, helloArchive(t), nil)
	cs := Plan(PlanInput{Archive: helloV2(t), Live: live, Installed: rec})
	d := changeOf(cs, "Agent/greeter").Diff
	g.Expect(d).To(HaveLen(1))
	g.Expect(d[0].From).To(ContainSubstring("warmly"))
	g.Expect(d[0].To).To(ContainSubstring("briefly"))
	g.Expect(cs.FromVersion).To(Equal("1.0.0"))
	g.Expect(cs.Version).To(Equal("1.1.0"))
	g.Expect(cs.Namespace).To(Equal("samples.hello-pack"))
}

func TestPlanOrdersChangesByInstallOrderAndRemovalsLastInReverse(t *testing.T) {
	g := NewWithT(t)
	live, rec := installedState(t, helloArchive(t), nil)
	v2 := helloV2(t)
	// v2 drops the model too: the Agent's removal must come before the profile's.
	cs := Plan(PlanInput{Archive: &Archive{Manifest: v2.Manifest, Resources: v2.Resources[3:]}, Live: live, Installed: rec})
	var keys []string
	for _, c := range cs.Changes {
		keys = append(keys, string(c.Action)+" "+Key(c.Kind, c.Name))
	}
	g.Expect(keys).To(Equal([]string{"unchanged Flow/greeter", "unchanged Entry/say-hello",
		"remove Agent/greeter", "remove Agent/translator", "remove ModelProfile/hello-offline", "remove ModelProvider/hello-offline"}))
}

func TestPlanReadiness(t *testing.T) {
	required := func(t *testing.T) *Archive {
		es := helloEntries(t)
		es[len(es)-1].body = strings.Replace(es[len(es)-1].body, "required: false", "required: true", 1) // pack.yaml sorts last
		a, err := Read(zipEntries(t, es...), "")
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	cases := map[string]struct {
		in        func(t *testing.T) PlanInput
		readiness string
		missing   []string
	}{
		"ready when every required binding is satisfied": {
			in: func(t *testing.T) PlanInput {
				return PlanInput{Archive: required(t), Bindings: map[string]BindingSelection{"translation-model": {Namespace: "default", Name: "gpt"}}, Satisfied: map[string]bool{"translation-model": true}}
			},
			readiness: ReadinessReady,
		},
		"ready when only an optional binding is unsatisfied": {
			in:        func(t *testing.T) PlanInput { return PlanInput{Archive: helloArchive(t)} },
			readiness: ReadinessReady,
		},
		"needs configuration when a required binding has no selection": {
			in:        func(t *testing.T) PlanInput { return PlanInput{Archive: required(t)} },
			readiness: ReadinessNeedsConfiguration,
		},
		"needs configuration when the selected ModelProfile does not exist": {
			in: func(t *testing.T) PlanInput {
				return PlanInput{Archive: required(t), Bindings: map[string]BindingSelection{"translation-model": {Namespace: "default", Name: "gone"}}, Satisfied: map[string]bool{}}
			},
			readiness: ReadinessNeedsConfiguration,
		},
		"missing requirement when a Flow names an Agent neither the Pack nor the workspace has": {
			in: func(t *testing.T) PlanInput {
				es := helloEntries(t, entry{name: "flows/greeter.yaml", body: strings.Replace(readFile(t, "flows/greeter.yaml"), "id: greeter", "id: nobody", 1)})
				a, err := Read(zipEntries(t, es...), "")
				if err != nil {
					t.Fatal(err)
				}
				return PlanInput{Archive: a}
			},
			readiness: ReadinessMissingRequirement, missing: []string{"Flow/greeter -> Agent/nobody at definition.target.id"},
		},
		"an Agent the workspace has in the Pack's namespace satisfies the Flow": {
			in: func(t *testing.T) PlanInput {
				es := helloEntries(t, entry{name: "flows/greeter.yaml", body: strings.Replace(readFile(t, "flows/greeter.yaml"), "id: greeter", "id: elsewhere", 1)})
				a, _ := Read(zipEntries(t, es...), "")
				return PlanInput{Archive: a, Live: []LiveObject{{Kind: "Agent", Name: "elsewhere"}}}
			},
			readiness: ReadinessReady,
		},
		"a reference to another namespace is asked of the workspace": {
			in: func(t *testing.T) PlanInput {
				es := helloEntries(t, entry{name: "entries/say-hello.yaml", body: strings.Replace(readFile(t, "entries/say-hello.yaml"), "name: greeter", "name: greeter\n      namespace: default", 1)})
				a, err := Read(zipEntries(t, es...), "")
				if err != nil {
					t.Fatal(err)
				}
				return PlanInput{Archive: a, Exists: func(kind, ns, name string) bool { return false }}
			},
			readiness: ReadinessMissingRequirement, missing: []string{"Entry/say-hello -> Flow/greeter at definition.binding.flow.name"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			cs := Plan(c.in(t))
			g.Expect(cs.Readiness).To(Equal(c.readiness))
			var missing []string
			for _, m := range cs.Missing {
				missing = append(missing, m.From+" -> "+m.Kind+"/"+m.Name+" at "+m.Field)
			}
			g.Expect(missing).To(Equal(c.missing))
		})
	}
}

func TestPlanReportsEachBindingAndItsSelection(t *testing.T) {
	g := NewWithT(t)
	cs := Plan(PlanInput{Archive: helloArchive(t), Bindings: map[string]BindingSelection{"translation-model": {Namespace: "default", Name: "gpt"}}, Satisfied: map[string]bool{"translation-model": true}})
	g.Expect(cs.Bindings).To(HaveLen(1))
	g.Expect(cs.Bindings[0].Name).To(Equal("translation-model"))
	g.Expect(cs.Bindings[0].TargetKind).To(Equal(ModelProfileBinding))
	g.Expect(*cs.Bindings[0].Selection).To(Equal(BindingSelection{Namespace: "default", Name: "gpt"}))
	g.Expect(cs.Bindings[0].Satisfied).To(BeTrue())
}

func readFile(t testing.TB, name string) string {
	for _, e := range dirEntries(t, helloPackDir) {
		if e.name == name {
			return e.body
		}
	}
	t.Fatalf("no %s in hello-pack", name)
	return ""
}
