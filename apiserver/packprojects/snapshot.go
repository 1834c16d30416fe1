package packprojects

import (
	"encoding/json"
	"strings"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/pack"
)

// internalKey says whether a label or annotation key is the platform's own (ownership, built-in,
// system-managed, owner) or a tool's bookkeeping (kubectl's last-applied configuration): never
// exported content. The same keys pack.Fingerprint leaves out.
func internalKey(k string) bool {
	return strings.HasPrefix(k, "platform/") || k == "kubectl.kubernetes.io/last-applied-configuration"
}

func exportable(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if !internalKey(k) {
			out[k] = v
		}
	}
	return out
}

// Snapshot is the exportable content of o, in the kube spelling: apiVersion, kind, name, the
// labels and annotations a person set and the definition, with the references rewritten so the
// archive installs in another namespace or workspace. Status, uid, resourceVersion, generation,
// managedFields and timestamps are left out; a Secret is never content, so no value can be.
func (p *Preview) Snapshot(o *Object) (map[string]any, error) {
	def, err := deepCopy(definition(o.Content))
	if err != nil {
		return nil, err
	}
	if def == nil {
		def = map[string]any{}
	}
	switch o.Kind {
	case KindAgent:
		if b, ok := p.profileBinding[o.Key()]; ok {
			def["modelProfile"] = map[string]any{"binding": b}
		}
	case KindModelProvider:
		if b, ok := p.secretBinding[o.Key()]; ok {
			def["credential"] = map[string]any{"binding": b}
		}
	case KindEntry:
		// The Flow comes with the Pack, into the Pack's namespace: a reference to the default
		// namespace would point back at the source workspace's own.
		for _, f := range []string{"binding", "continuation"} {
			if b, _ := def[f].(map[string]any); b != nil {
				if flow, _ := b["flow"].(map[string]any); flow != nil && flow["namespace"] == string(platformv1.DefaultResourceNamespace) {
					delete(flow, "namespace")
				}
			}
		}
	}
	meta := map[string]any{"name": o.Name}
	if l := exportable(labels(o.Content)); len(l) > 0 {
		meta["labels"] = l
	}
	if a := exportable(annotations(o.Content)); len(a) > 0 {
		meta["annotations"] = a
	}
	return map[string]any{"apiVersion": manifest.KubeAPIVersion, "kind": o.Kind, "metadata": meta, "definition": def}, nil
}

// deepCopy copies a JSON object through its encoding, so that numbers and nesting are those the
// archive will hold.
func deepCopy(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(data, &out)
}

// Coordinate is what a project names and presents its Pack with.
type Coordinate struct {
	Publisher   string
	Name        string
	Version     string
	DisplayName string
	Description string
	Audience    string
	Purpose     string
	Categories  []string
	Tags        []string
}

// Contents is the manifest and the files of the Pack of a valid preview, in install order.
func (p *Preview) Contents(c Coordinate) (pack.Manifest, []pack.File, error) {
	m := pack.Manifest{APIVersion: manifest.SpecAPIVersion, Kind: "Pack",
		Metadata: pack.ManifestMetadata{Name: c.Name, Publisher: c.Publisher, Version: c.Version, Audience: c.Audience, Purpose: c.Purpose,
			DisplayName: c.DisplayName, Description: c.Description, Categories: c.Categories, Tags: c.Tags},
		Definition: pack.ManifestDefinition{Resources: []string{}}}
	for _, b := range p.Bindings {
		m.Definition.Bindings = append(m.Definition.Bindings, pack.BindingDeclaration{Name: b.Name, TargetKind: pack.BindingTargetKind(b.TargetKind),
			DisplayName: b.DisplayName, Required: b.Required})
	}
	files := make([]pack.File, 0, len(p.Resources))
	for _, r := range p.Resources {
		obj, err := p.Snapshot(p.objects[r.Key])
		if err != nil {
			return m, nil, err
		}
		m.Definition.Resources = append(m.Definition.Resources, r.Path)
		files = append(files, pack.File{Path: r.Path, Object: obj})
	}
	return m, files, nil
}
