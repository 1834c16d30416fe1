// Package packprojects is the Pack Composer: which resources of a workspace's default namespace a
// Pack can carry, the dependency closure of a selection (direct and automatic resources, the
// bindings it needs, its archive paths and what keeps it from being a valid Pack), the snapshot
// of the selected objects with their references rewritten so the archive installs elsewhere, and
// the store of the Pack projects generated from them. The closure is a pure function of the
// selection and the objects, recomputed completely at every call.
package packprojects

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Kinds of the inventory.
const (
	KindAgent          = "Agent"
	KindFlow           = "Flow"
	KindEntry          = "Entry"
	KindModelProfile   = "ModelProfile"
	KindModelProvider  = "ModelProvider"
	KindRuntimeProfile = "RuntimeProfile"
	KindSecret         = "Secret"
	KindVault          = "Vault"
	KindTool           = "Tool"
)

// ContentKinds are the kinds a Pack carries, in install order.
var ContentKinds = []string{KindModelProvider, KindRuntimeProfile, KindModelProfile, KindAgent, KindFlow, KindEntry}

// InventoryKinds are the kinds the Composer lists, in the order it lists them.
var InventoryKinds = []string{KindAgent, KindFlow, KindEntry, KindModelProfile, KindModelProvider, KindRuntimeProfile, KindSecret, KindVault, KindTool}

// folders are the archive folders of the contained kinds.
var folders = map[string]string{
	KindAgent: "agents", KindFlow: "flows", KindEntry: "entries",
	KindModelProfile: "modelprofiles", KindModelProvider: "modelproviders", KindRuntimeProfile: "runtimeprofiles",
}

// Roles of an inventory item.
const (
	RoleResource    = "resource"
	RoleBinding     = "binding"
	RoleUnsupported = "unsupported"
)

// Origins of a resource of the closure.
const (
	OriginDirect    = "direct"
	OriginAutomatic = "automatic"
)

// Binding target kinds (pack.BindingTargetKind's values).
const (
	ModelProfileBinding = "modelProfile"
	SecretBinding       = "secret"
)

// MaxSelection bounds a selection; MaxResources bounds the closure: an archive holds at most 128
// files, pack.yaml and a README among them.
const (
	MaxSelection = 128
	MaxResources = 126
)

// Object is one object of the workspace's default namespace, as the kube API holds it (the kube
// spelling, with status and server-set metadata).
type Object struct {
	Kind string
	Name string
	// Content is the unstructured object.
	Content map[string]any
}

// Key is the Composer's key of the object, `<Kind>/<name>`.
func (o *Object) Key() string { return Key(o.Kind, o.Name) }

// Key is the Composer's key of a resource of the default namespace.
func Key(kind, name string) string { return kind + "/" + name }

// Builtin says whether the platform shipped the object (the built-in annotation or a `-builtin`
// name): it is a binding target, not content a Pack carries.
func (o *Object) Builtin() bool {
	return annotations(o.Content)[manifest.BuiltinAnnotation] == "true" || strings.HasSuffix(o.Name, "-builtin")
}

// SystemManaged says whether the platform keeps the object in step with another one (the hidden
// Direct Agent Flow of an Agent-bound Entry): publication recreates it, so it is never content.
func (o *Object) SystemManaged() bool {
	return labels(o.Content)[manifest.SystemManagedLabel] == "true"
}

// DisplayName is definition.displayName, else the name.
func (o *Object) DisplayName() string {
	if s, _ := definition(o.Content)["displayName"].(string); s != "" {
		return s
	}
	return o.Name
}

// Lookup finds an object of the default namespace by kind and name; nil when there is none.
type Lookup func(kind, name string) (*Object, error)

// InventoryItem is one resource of the Composer's inventory.
type InventoryItem struct {
	Key         string `json:"key" doc:"<Kind>/<name>, the key a selection names"`
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	DisplayName string `json:"displayName"`
	Selectable  bool   `json:"selectable" doc:"Whether the resource can be selected as Pack content"`
	Role        string `json:"role" enum:"resource,binding,unsupported" doc:"resource: Pack content; binding: what a Pack refers to through a binding; unsupported: visible, never exported"`
	Note        string `json:"note,omitempty" doc:"Why the resource is not selectable, or how a Pack uses it"`
}

// Listed says whether the inventory shows o: system-managed Flows are the platform's, not
// something a person picks.
func Listed(o *Object) bool { return !(o.Kind == KindFlow && o.SystemManaged()) }

// ItemOf is the inventory item of o.
func ItemOf(o *Object) InventoryItem {
	item := InventoryItem{Key: o.Key(), Kind: o.Kind, Name: o.Name, DisplayName: o.DisplayName(), Role: RoleResource}
	switch {
	case o.Kind == KindSecret:
		item.Role, item.Note = RoleBinding, "A Pack refers to a Secret through a binding; its value is never copied"
	case o.Kind == KindVault:
		item.Role, item.Note = RoleUnsupported, "Vaults cannot be exported"
	case o.Kind == KindTool:
		item.Role, item.Note = RoleUnsupported, "Tools cannot be exported; an Agent keeps the names of its tools"
	case o.Builtin() && o.Kind == KindModelProfile:
		item.Role, item.Note = RoleBinding, "Built-in: a Pack refers to it through a modelProfile binding, never carries it"
	case o.Builtin():
		item.Note = "Built-in: the platform ships it, so a Pack does not carry it"
	default:
		item.Selectable = true
	}
	return item
}

// ClosureResource is a resource of the closure.
type ClosureResource struct {
	Key               string   `json:"key"`
	Kind              string   `json:"kind"`
	Name              string   `json:"name"`
	Origin            string   `json:"origin" enum:"direct,automatic" doc:"direct: selected; automatic: brought in by what requires it"`
	RequiredBy        []string `json:"requiredBy" doc:"Keys of the resources of the closure that refer to it"`
	Path              string   `json:"path" doc:"Its path in the archive"`
	LeaveAsDependency bool     `json:"leaveAsDependency" doc:"A direct selection another selected resource requires: removing it leaves it in the Pack as a dependency. Never on a ModelProfile: removed, it becomes a modelProfile binding"`
}

// Binding is a binding the Pack declares.
type Binding struct {
	Name        string   `json:"name"`
	TargetKind  string   `json:"targetKind" enum:"modelProfile,secret"`
	DisplayName string   `json:"displayName"`
	Required    bool     `json:"required"`
	For         []string `json:"for" doc:"Keys of the resources that refer to it"`
	// target is the name of the referenced object in the workspace.
	target string
}

// Issue is something that keeps the selection from being a valid Pack.
type Issue struct {
	Key     string `json:"key"`
	Message string `json:"message"`
}

// Preview is the complete closure of a selection.
type Preview struct {
	Resources []ClosureResource `json:"resources"`
	Bindings  []Binding         `json:"bindings"`
	Issues    []Issue           `json:"issues"`

	// objects are the objects of Resources, by key.
	objects map[string]*Object
	// rewrites are the binding references to write into the snapshot: for a resource key, the
	// binding name of its ModelProfile reference (Agents) or Secret reference (ModelProviders).
	profileBinding map[string]string
	secretBinding  map[string]string
}

// Direct and Automatic are the keys of the closure by origin, in closure order.
func (p *Preview) Direct() []string    { return p.keysOf(OriginDirect) }
func (p *Preview) Automatic() []string { return p.keysOf(OriginAutomatic) }

func (p *Preview) keysOf(origin string) []string {
	keys := []string{}
	for _, r := range p.Resources {
		if r.Origin == origin {
			keys = append(keys, r.Key)
		}
	}
	return keys
}

// reference is one reference of a content object to another object.
type reference struct {
	kind, name string
	// namespace is the resource namespace the reference names; empty for default.
	namespace string
	// field says where, for messages.
	field string
	// uid is set instead of name by a reference through a resource id, which means nothing in
	// another workspace.
	uid string
}

// Compose computes the closure of selection over the default namespace's objects. It reports
// every problem as an issue rather than failing, so that the Console can show them all; an error
// is only a failed lookup.
func Compose(selection []string, lookup Lookup) (*Preview, error) {
	p := &Preview{Resources: []ClosureResource{}, Bindings: []Binding{}, Issues: []Issue{},
		objects: map[string]*Object{}, profileBinding: map[string]string{}, secretBinding: map[string]string{}}
	if len(selection) > MaxSelection {
		p.issue("", fmt.Sprintf("a selection names at most %d resources", MaxSelection))
		return p, nil
	}
	direct := map[string]bool{}
	var queue []*Object
	for _, key := range selection {
		kind, name, ok := p.parseKey(key)
		if !ok || direct[Key(kind, name)] {
			continue
		}
		o, err := lookup(kind, name)
		if err != nil {
			return nil, err
		}
		switch item := (InventoryItem{}); {
		case o == nil:
			p.issue(key, fmt.Sprintf("%s %q does not exist in the default namespace", kind, name))
		case !Listed(o):
			p.issue(key, fmt.Sprintf("Flow %q is system-managed: publication keeps it in step with its Agent, so it is never Pack content", name))
		default:
			if item = ItemOf(o); !item.Selectable {
				p.issue(key, fmt.Sprintf("%s %q cannot be selected: %s", kind, name, item.Note))
				continue
			}
			direct[o.Key()] = true
			queue = append(queue, o)
		}
	}
	requiredBy := map[string][]string{}
	selected := map[string]bool{}
	bindings := map[string]*Binding{}
	var order []*Object
	for _, o := range queue {
		selected[o.Key()] = true
	}
	for len(queue) > 0 {
		o := queue[0]
		queue = queue[1:]
		order = append(order, o)
		p.objects[o.Key()] = o
		for _, ref := range references(o) {
			if ref.uid != "" {
				p.issue(o.Key(), fmt.Sprintf("%s names its %s by resourceId %q, which means nothing in another workspace: name it by name",
					ref.field, ref.kind, ref.uid))
				continue
			}
			target := Key(ref.kind, ref.name)
			if ref.namespace != "" && ref.namespace != string(platformv1.DefaultResourceNamespace) && ref.kind != KindSecret {
				p.issue(o.Key(), fmt.Sprintf("%s refers to %s %q of resource namespace %q: a Pack carries only default-namespace resources",
					ref.field, ref.kind, ref.name, ref.namespace))
				continue
			}
			switch ref.kind {
			case KindSecret:
				b := p.bind(bindings, SecretBinding, ref.name, o.Key(), lookup)
				p.secretBinding[o.Key()] = b
				continue
			case KindTool:
				continue
			case KindModelProfile:
				if !direct[target] {
					b := p.bind(bindings, ModelProfileBinding, ref.name, o.Key(), lookup)
					p.profileBinding[o.Key()] = b
					continue
				}
			}
			dep, err := lookup(ref.kind, ref.name)
			if err != nil {
				return nil, err
			}
			switch {
			case dep == nil:
				p.issue(o.Key(), fmt.Sprintf("%s refers to %s %q, which does not exist in the default namespace", ref.field, ref.kind, ref.name))
				continue
			case dep.Builtin():
				p.issue(o.Key(), fmt.Sprintf("%s refers to the built-in %s %q, which a Pack cannot carry", ref.field, ref.kind, ref.name)+
					builtinAdvice(o, dep))
				continue
			case !Listed(dep):
				p.issue(o.Key(), fmt.Sprintf("%s refers to the system-managed %s %q, which a Pack cannot carry", ref.field, ref.kind, ref.name))
				continue
			}
			if !containsString(requiredBy[target], o.Key()) {
				requiredBy[target] = append(requiredBy[target], o.Key())
			}
			if !selected[target] {
				selected[target] = true
				queue = append(queue, dep)
			}
		}
	}
	if len(order) > MaxResources {
		p.issue("", fmt.Sprintf("the Pack would hold %d resources; an archive holds at most %d", len(order), MaxResources))
	}
	sort.SliceStable(order, func(i, j int) bool { return less(order[i], order[j]) })
	for _, o := range order {
		origin := OriginAutomatic
		if direct[o.Key()] {
			origin = OriginDirect
		}
		by := requiredBy[o.Key()]
		sort.Strings(by)
		if by == nil {
			by = []string{}
		}
		p.Resources = append(p.Resources, ClosureResource{Key: o.Key(), Kind: o.Kind, Name: o.Name, Origin: origin, RequiredBy: by,
			Path: Path(o.Kind, o.Name), LeaveAsDependency: origin == OriginDirect && len(by) > 0 && o.Kind != KindModelProfile})
	}
	for _, b := range bindings {
		sort.Strings(b.For)
		p.Bindings = append(p.Bindings, *b)
	}
	sort.Slice(p.Bindings, func(i, j int) bool { return p.Bindings[i].Name < p.Bindings[j].Name })
	sort.SliceStable(p.Issues, func(i, j int) bool { return p.Issues[i].Key < p.Issues[j].Key })
	return p, nil
}

// builtinAdvice says what to do about a reference from o to the built-in dep.
func builtinAdvice(o, dep *Object) string {
	if o.Kind == KindModelProfile && dep.Kind == KindModelProvider {
		return "; leave the ModelProfile unselected so that it becomes a modelProfile binding"
	}
	return ""
}

// bind records that key refers to the object target of a binding's kind and answers the
// binding's name: the target's name, made a valid binding name, unless a binding of another
// target has that name already.
func (p *Preview) bind(bindings map[string]*Binding, targetKind, target, key string, lookup Lookup) string {
	var b *Binding
	for _, existing := range bindings {
		if existing.TargetKind == targetKind && existing.target == target {
			b = existing
		}
	}
	if b == nil {
		name := bindingName(target, "")
		if _, taken := bindings[name]; taken {
			name = bindingName(target, "-"+strings.ToLower(targetKind))
		}
		display := target
		kind := KindSecret
		if targetKind == ModelProfileBinding {
			kind = KindModelProfile
		}
		if o, err := lookup(kind, target); err == nil && o != nil {
			display = o.DisplayName()
		}
		b = &Binding{Name: name, TargetKind: targetKind, DisplayName: display, Required: true, target: target}
		bindings[name] = b
	}
	if !containsString(b.For, key) {
		b.For = append(b.For, key)
	}
	return b.Name
}

// bindingName is name as a binding name (1 to 63 lowercase ASCII letters, digits and -) with
// suffix: a resource name may hold dots and be longer; a shortened one ends with a short hash of
// the whole so that two long names stay apart.
func bindingName(name, suffix string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		s = "binding"
	}
	if len(s)+len(suffix) > 63 {
		sum := sha256.Sum256([]byte(name))
		s = strings.Trim(s[:63-len(suffix)-9], "-") + "-" + hex.EncodeToString(sum[:4])
	}
	return s + suffix
}

func (p *Preview) issue(key, message string) {
	p.Issues = append(p.Issues, Issue{Key: key, Message: message})
}

// parseKey reads `<Kind>/<name>`, or `<Kind>/<namespace>/<name>` naming the default namespace;
// anything else is an issue.
func (p *Preview) parseKey(key string) (kind, name string, ok bool) {
	parts := strings.Split(key, "/")
	switch {
	case len(parts) == 3 && parts[1] != string(platformv1.DefaultResourceNamespace):
		p.issue(key, fmt.Sprintf("%q is in resource namespace %q: only default-namespace resources of the workspace can be composed", key, parts[1]))
		return "", "", false
	case len(parts) == 3:
		parts = []string{parts[0], parts[2]}
	case len(parts) != 2:
		p.issue(key, fmt.Sprintf("%q is not a key: a key is <Kind>/<name>", key))
		return "", "", false
	}
	kind, name = parts[0], parts[1]
	switch {
	case !containsString(InventoryKinds, kind):
		p.issue(key, fmt.Sprintf("%q is not a kind a Pack can carry: selectable kinds are %s", kind, strings.Join(ContentKinds, ", ")))
		return "", "", false
	case !containsString(ContentKinds, kind):
		item := ItemOf(&Object{Kind: kind, Name: name})
		p.issue(key, fmt.Sprintf("%s %q cannot be selected: %s", kind, name, item.Note))
		return "", "", false
	case name == "" || len(name) > 253:
		p.issue(key, fmt.Sprintf("%q is not a key: the name is empty or too long", key))
		return "", "", false
	}
	return kind, name, true
}

// Path is the archive path of a contained resource.
func Path(kind, name string) string { return folders[kind] + "/" + name + ".yaml" }

// less orders resources by install order, then by name.
func less(a, b *Object) bool {
	ia, ib := indexOf(ContentKinds, a.Kind), indexOf(ContentKinds, b.Kind)
	if ia != ib {
		return ia < ib
	}
	return a.Name < b.Name
}

// references are what o refers to, by kind.
func references(o *Object) []reference {
	d := definition(o.Content)
	var refs []reference
	switch o.Kind {
	case KindEntry:
		for _, f := range []string{"binding", "continuation"} {
			b, _ := d[f].(map[string]any)
			if a := str(b, "agent", "name"); a != "" {
				refs = append(refs, reference{kind: KindAgent, name: a, field: "definition." + f + ".agent"})
			}
			if fl := str(b, "flow", "name"); fl != "" {
				refs = append(refs, reference{kind: KindFlow, name: fl, namespace: str(b, "flow", "namespace"), field: "definition." + f + ".flow"})
			}
		}
	case KindFlow:
		if t, _ := d["target"].(map[string]any); t != nil {
			if id, _ := t["id"].(string); id != "" {
				refs = append(refs, reference{kind: KindAgent, name: id, field: "definition.target"})
			}
		}
		steps, _ := d["steps"].([]any)
		for i, s := range steps {
			step, _ := s.(map[string]any)
			if a := str(step, "agent", "name"); a != "" {
				refs = append(refs, reference{kind: KindAgent, name: a, field: fmt.Sprintf("definition.steps[%d].agent", i)})
			}
		}
	case KindAgent:
		if n := str(d, "modelProfile", "name"); n != "" {
			refs = append(refs, reference{kind: KindModelProfile, name: n, field: "definition.modelProfile"})
		} else if id := str(d, "modelProfile", "resourceId"); id != "" {
			refs = append(refs, reference{kind: KindModelProfile, uid: id, field: "definition.modelProfile"})
		}
		tools, _ := d["tools"].([]any)
		for _, t := range tools {
			if n, _ := t.(map[string]any)["name"].(string); n != "" {
				refs = append(refs, reference{kind: KindTool, name: n, field: "definition.tools"})
			}
		}
	case KindModelProfile:
		if n := str(d, "provider", "name"); n != "" {
			refs = append(refs, reference{kind: KindModelProvider, name: n, field: "definition.provider"})
		}
	case KindModelProvider:
		if n := str(d, "credential", "name"); n != "" {
			refs = append(refs, reference{kind: KindSecret, name: n, namespace: str(d, "credential", "namespace"), field: "definition.credential"})
		}
	}
	return refs
}

func definition(obj map[string]any) map[string]any {
	d, _ := obj["definition"].(map[string]any)
	return d
}

func metadata(obj map[string]any) map[string]any {
	m, _ := obj["metadata"].(map[string]any)
	return m
}

func stringMap(v any) map[string]string {
	out := map[string]string{}
	m, _ := v.(map[string]any)
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func annotations(obj map[string]any) map[string]string {
	return stringMap(metadata(obj)["annotations"])
}
func labels(obj map[string]any) map[string]string { return stringMap(metadata(obj)["labels"]) }

// str is the string at path under m.
func str(m map[string]any, path ...string) string {
	var v any = m
	for _, p := range path {
		mm, _ := v.(map[string]any)
		if mm == nil {
			return ""
		}
		v = mm[p]
	}
	s, _ := v.(string)
	return s
}

func containsString(xs []string, s string) bool { return indexOf(xs, s) >= 0 }

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}
