package packprojects

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"platform.dev/platform/internal/pack"
)

// workspace is a default namespace of objects, from YAML documents in the kube spelling.
type workspace map[string]*Object

func objects(t testing.TB, docs ...string) workspace {
	t.Helper()
	ws := workspace{}
	for _, doc := range docs {
		ws.add(t, []byte(doc))
	}
	return ws
}

func (ws workspace) add(t testing.TB, data []byte) {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufioReader(data))
	for {
		doc, err := reader.Read()
		if err != nil {
			return
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		if obj == nil {
			continue
		}
		kind, _ := obj["kind"].(string)
		name, _ := metadata(obj)["name"].(string)
		ws[Key(kind, name)] = &Object{Kind: kind, Name: name, Content: obj}
	}
}

func (ws workspace) lookup(kind, name string) (*Object, error) { return ws[Key(kind, name)], nil }

func (ws workspace) compose(t testing.TB, selection ...string) *Preview {
	t.Helper()
	p, err := Compose(selection, ws.lookup)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func agent(name, profile string) string {
	s := "apiVersion: platform.dev/v1\nkind: Agent\nmetadata:\n  name: " + name + "\ndefinition:\n  instructions: Help\n"
	if profile != "" {
		s += "  modelProfile:\n    name: " + profile + "\n"
	}
	return s
}

func orchestration(name string, agents ...string) string {
	s := "apiVersion: platform.dev/v1\nkind: Flow\nmetadata:\n  name: " + name + "\ndefinition:\n  flowKind: Orchestration\n  version: 1.0.0\n  publication: Automatic\n  steps:\n  - name: in\n    type: Input\n"
	for i, a := range agents {
		s += "  - name: step-" + string(rune('a'+i)) + "\n    type: Agent\n    agent:\n      name: " + a + "\n"
	}
	s += "  - name: out\n    type: Output\n  edges:\n"
	prev := "in"
	for i := range agents {
		step := "step-" + string(rune('a'+i))
		s += "  - from: " + prev + "\n    to: " + step + "\n"
		prev = step
	}
	s += "  - from: " + prev + "\n    to: out\n"
	return s
}

func entry(name, flow string) string {
	return "apiVersion: platform.dev/v1\nkind: Entry\nmetadata:\n  name: " + name + "\ndefinition:\n  displayName: Ask\n  publication: Automatic\n  binding:\n    flow:\n      name: " + flow + "\n      namespace: default\n" +
		"  fields:\n  - name: request\n    label: Request\n    type: MultilineText\n    role: PrimaryInput\n    required: true\n"
}

func profile(name, provider string, annotations string) string {
	return "apiVersion: platform.dev/v1\nkind: ModelProfile\nmetadata:\n  name: " + name + annotations + "\ndefinition:\n  displayName: Profile " + name + "\n  provider:\n    name: " + provider + "\n"
}

func provider(name, secret string) string {
	s := "apiVersion: platform.dev/v1\nkind: ModelProvider\nmetadata:\n  name: " + name + "\ndefinition:\n  type: OpenAICompatible\n  endpoint: https://models.example.com/v1\n"
	if secret != "" {
		s += "  credential:\n    name: " + secret + "\n"
	}
	return s
}

const secret = "apiVersion: platform.dev/v1\nkind: Secret\nmetadata:\n  name: api-key\ndefinition:\n  displayName: API key\n  vault:\n    name: local\n"

func keysOf(p *Preview) map[string]string {
	out := map[string]string{}
	for _, r := range p.Resources {
		out[r.Key] = r.Origin
	}
	return out
}

func resource(p *Preview, key string) ClosureResource {
	for _, r := range p.Resources {
		if r.Key == key {
			return r
		}
	}
	return ClosureResource{}
}

func TestTheClosureBringsInWhatTheSelectionRequiresAndAnUnselectedProfileBecomesABinding(t *testing.T) {
	g := NewWithT(t)
	ws := objects(t, entry("ask", "triage"), orchestration("triage", "sorter", "writer"), agent("sorter", "small"), agent("writer", "small"),
		profile("small", "models", ""), provider("models", "api-key"), secret)

	p := ws.compose(t, "Entry/ask")
	g.Expect(p.Issues).To(BeEmpty())
	g.Expect(keysOf(p)).To(Equal(map[string]string{"Entry/ask": "direct", "Flow/triage": "automatic", "Agent/sorter": "automatic", "Agent/writer": "automatic"}),
		"Entry -> Flow -> the Agents of its steps; the profile they use is not content unless selected")
	g.Expect(resource(p, "Flow/triage").RequiredBy).To(Equal([]string{"Entry/ask"}))
	g.Expect(resource(p, "Agent/sorter").RequiredBy).To(Equal([]string{"Flow/triage"}))
	g.Expect(resource(p, "Agent/sorter").Path).To(Equal("agents/sorter.yaml"))
	g.Expect(resource(p, "Flow/triage").Path).To(Equal("flows/triage.yaml"))
	g.Expect(resource(p, "Entry/ask").Path).To(Equal("entries/ask.yaml"))
	g.Expect(p.Bindings).To(Equal([]Binding{{Name: "small", TargetKind: "modelProfile", DisplayName: "Profile small", Required: true,
		For: []string{"Agent/sorter", "Agent/writer"}, target: "small"}}), "one binding for the profile both Agents use")
	g.Expect(p.Resources[0].Key).To(Equal("Agent/sorter"), "resources come in install order")
}

func TestASelectedProfileBringsItsProviderAndTheProvidersSecretIsAlwaysABinding(t *testing.T) {
	g := NewWithT(t)
	ws := objects(t, agent("sorter", "small"), profile("small", "models", ""), provider("models", "api-key"), secret)

	p := ws.compose(t, "Agent/sorter", "ModelProfile/small")
	g.Expect(p.Issues).To(BeEmpty())
	g.Expect(keysOf(p)).To(Equal(map[string]string{"Agent/sorter": "direct", "ModelProfile/small": "direct", "ModelProvider/models": "automatic"}))
	g.Expect(resource(p, "ModelProvider/models").Path).To(Equal("modelproviders/models.yaml"))
	g.Expect(resource(p, "ModelProfile/small").Path).To(Equal("modelprofiles/small.yaml"))
	g.Expect(p.Bindings).To(HaveLen(1))
	g.Expect(p.Bindings[0]).To(And(HaveField("Name", "api-key"), HaveField("TargetKind", "secret"), HaveField("DisplayName", "API key"),
		HaveField("For", []string{"ModelProvider/models"})))

	selected := ws.compose(t, "ModelProvider/models", "Secret/api-key")
	g.Expect(keysOf(selected)).To(Equal(map[string]string{"ModelProvider/models": "direct"}), "a Secret is never content")
	g.Expect(selected.Bindings).To(ContainElement(HaveField("TargetKind", "secret")), "even when someone tries to select it")
	g.Expect(selected.Issues).To(ConsistOf(HaveField("Key", "Secret/api-key")))
}

func TestADirectSelectionAnotherSelectedResourceRequiresIsLeftAsADependency(t *testing.T) {
	g := NewWithT(t)
	ws := objects(t, entry("ask", "triage"), orchestration("triage", "sorter"), agent("sorter", ""))

	p := ws.compose(t, "Flow/triage", "Agent/sorter")
	g.Expect(resource(p, "Agent/sorter")).To(And(HaveField("Origin", "direct"), HaveField("LeaveAsDependency", true)),
		"removing it leaves it in the Pack: the Flow needs it")
	g.Expect(resource(p, "Flow/triage").LeaveAsDependency).To(BeFalse(), "nothing selected requires the Flow")

	removed := ws.compose(t, "Flow/triage")
	g.Expect(resource(removed, "Agent/sorter").Origin).To(Equal("automatic"), "left as a dependency: still there, automatic now")
}

func TestKeepPromotesAnAutomaticDependencyToADirectSelection(t *testing.T) {
	g := NewWithT(t)
	ws := objects(t, entry("ask", "triage"), orchestration("triage", "sorter"), agent("sorter", ""))

	before := ws.compose(t, "Entry/ask")
	g.Expect(resource(before, "Flow/triage").Origin).To(Equal("automatic"))
	kept := ws.compose(t, "Entry/ask", "Flow/triage")
	g.Expect(resource(kept, "Flow/triage")).To(And(HaveField("Origin", "direct"), HaveField("LeaveAsDependency", true)))
	g.Expect(kept.Automatic()).To(Equal([]string{"Agent/sorter"}))
	g.Expect(kept.Direct()).To(Equal([]string{"Flow/triage", "Entry/ask"}))
	g.Expect(len(kept.Resources)).To(Equal(len(before.Resources)), "keeping changes the origin, not the closure")
}

func TestASelectionThatIsNotAValidPackReportsEachIssue(t *testing.T) {
	ws := objects(t, orchestration("orphan", "gone"), agent("sorter", ""),
		profile("wrapped", "deterministic-builtin", ""), provider("deterministic-builtin", ""),
		profile("shipped", "models", "\n  annotations:\n    platform/builtin: \"true\""), provider("models", ""),
		"apiVersion: platform.dev/v1\nkind: Flow\nmetadata:\n  name: direct-sorter\n  labels:\n    platform/system-managed: \"true\"\ndefinition:\n  flowKind: Direct\n  target:\n    kind: Agent\n    id: sorter\n",
		"apiVersion: platform.dev/v1\nkind: Agent\nmetadata:\n  name: by-id\ndefinition:\n  modelProfile:\n    resourceId: 0b7d\n",
		"apiVersion: platform.dev/v1\nkind: Entry\nmetadata:\n  name: elsewhere\ndefinition:\n  binding:\n    flow:\n      name: kit-flow\n      namespace: acme.kit\n")
	for name, c := range map[string]struct {
		key, message string
	}{
		"a Flow referring to an Agent that does not exist": {"Flow/orphan", `refers to Agent "gone", which does not exist`},
		"a key of another resource namespace":              {"Agent/acme.kit/sorter", "only default-namespace resources"},
		"a key that is no key":                             {"sorter", "is not a key"},
		"an unknown kind":                                  {"Gadget/sorter", "is not a kind a Pack can carry"},
		"a Vault":                                          {"Vault/local", "Vaults cannot be exported"},
		"a Tool":                                           {"Tool/search", "Tools cannot be exported"},
		"an object that does not exist":                    {"Agent/nobody", "does not exist in the default namespace"},
		"a built-in ModelProfile":                          {"ModelProfile/shipped", "modelProfile binding"},
		"a profile on a built-in provider":                 {"ModelProfile/wrapped", "leave the ModelProfile unselected"},
		"a system-managed Flow":                            {"Flow/direct-sorter", "system-managed"},
		"a profile named by resource id":                   {"Agent/by-id", "resourceId"},
		"an Entry on a Flow of another namespace":          {"Entry/elsewhere", `resource namespace "acme.kit"`},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := ws.compose(t, c.key)
			g.Expect(p.Issues).To(ConsistOf(And(HaveField("Key", c.key), HaveField("Message", ContainSubstring(c.message)))))
		})
	}
}

func TestASnapshotCarriesContentOnlyWithItsReferencesRewritten(t *testing.T) {
	g := NewWithT(t)
	live := `apiVersion: platform.dev/v1
kind: ModelProvider
metadata:
  name: models
  namespace: ws-1
  uid: 8f0c
  resourceVersion: "42"
  generation: 3
  creationTimestamp: "2026-01-01T00:00:00Z"
  managedFields:
  - manager: kubectl
  labels:
    team: support
    platform/pack: acme.kit
  annotations:
    note: kept
    platform/builtin: "false"
    kubectl.kubernetes.io/last-applied-configuration: "{}"
definition:
  type: OpenAICompatible
  endpoint: https://models.example.com/v1
  credential:
    name: api-key
status:
  conditions:
  - type: Ready
    status: "True"
`
	ws := objects(t, live, secret, agent("sorter", "small"), profile("small", "models", ""),
		entry("ask", "triage"), orchestration("triage", "sorter"))
	p := ws.compose(t, "ModelProvider/models", "Entry/ask")
	g.Expect(p.Issues).To(BeEmpty())

	provider, err := p.Snapshot(ws["ModelProvider/models"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(provider).To(Equal(map[string]any{
		"apiVersion": "platform.dev/v1", "kind": "ModelProvider",
		"metadata":   map[string]any{"name": "models", "labels": map[string]any{"team": "support"}, "annotations": map[string]any{"note": "kept"}},
		"definition": map[string]any{"type": "OpenAICompatible", "endpoint": "https://models.example.com/v1", "credential": map[string]any{"binding": "api-key"}},
	}), "no status, uid, resourceVersion, generation, managedFields or platform metadata; the Secret is a binding")
	sorter, err := p.Snapshot(ws["Agent/sorter"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sorter["definition"]).To(HaveKeyWithValue("modelProfile", map[string]any{"binding": "small"}))
	ask, err := p.Snapshot(ws["Entry/ask"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ask["definition"]).To(HaveKeyWithValue("binding", map[string]any{"flow": map[string]any{"name": "triage"}}),
		"the Flow comes with the Pack: the reference resolves in the Pack's namespace")
	g.Expect(ws["ModelProvider/models"].Content["definition"]).To(HaveKeyWithValue("credential", map[string]any{"name": "api-key"}),
		"the workspace's object is left as it is")
}

var coordinate = Coordinate{Publisher: "acme", Name: "triage-kit", Version: "1.0.0", DisplayName: "Triage kit"}

func TestTheSameSelectionOfUnchangedResourcesGivesAByteIdenticalArchive(t *testing.T) {
	g := NewWithT(t)
	ws := objects(t, entry("ask", "triage"), orchestration("triage", "sorter", "writer"), agent("sorter", "small"), agent("writer", "small"),
		profile("small", "models", ""), provider("models", "api-key"), secret)

	first, a, err := ws.compose(t, "Entry/ask", "ModelProfile/small").Generate(coordinate)
	g.Expect(err).NotTo(HaveOccurred())
	second, b, err := ws.compose(t, "ModelProfile/small", "Entry/ask").Generate(coordinate)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second).To(Equal(first), "the order of the selection does not matter")
	g.Expect(b.Digest).To(Equal(a.Digest))
	g.Expect(a.Manifest.Definition.Resources).To(ConsistOf("entries/ask.yaml", "flows/triage.yaml", "agents/sorter.yaml", "agents/writer.yaml",
		"modelprofiles/small.yaml", "modelproviders/models.yaml"))
	g.Expect(a.Manifest.Definition.Bindings).To(ConsistOf(pack.BindingDeclaration{Name: "api-key", TargetKind: pack.SecretBinding, DisplayName: "API key", Required: true}))

	ws["Agent/writer"].Content["definition"].(map[string]any)["instructions"] = "Write shorter"
	changed, c, err := ws.compose(t, "Entry/ask", "ModelProfile/small").Generate(coordinate)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).NotTo(Equal(first))
	g.Expect(c.Digest).NotTo(Equal(a.Digest), "a changed resource changes the archive")
}

// Composing the samples and reading the archive back gives the source objects' content: each
// resource's fingerprint is its source's, except for the references that became bindings.
func TestComposingTheSamplesReadsBackWithTheSourceObjectsFingerprints(t *testing.T) {
	g := NewWithT(t)
	ws := workspace{}
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range files {
		data, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		ws.add(t, data)
	}
	p := ws.compose(t, "Entry/support-request", "ModelProfile/offline", "ModelProfile/default", "RuntimeProfile/interactive")
	g.Expect(p.Issues).To(BeEmpty())
	g.Expect(keysOf(p)).To(Equal(map[string]string{"Entry/support-request": "direct", "ModelProfile/offline": "direct", "ModelProfile/default": "direct",
		"RuntimeProfile/interactive": "direct", "Agent/support-triage": "automatic", "ModelProvider/offline": "automatic", "ModelProvider/openai": "automatic"}))
	_, archive, err := p.Generate(coordinate)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(archive.Resources).To(HaveLen(len(p.Resources)))
	for _, r := range archive.Resources {
		source := ws[Key(string(r.Kind), r.Name)]
		g.Expect(source).NotTo(BeNil(), r.Path)
		want := source.Content
		if r.Kind == KindModelProvider && r.Name == "openai" {
			want, err = deepCopy(source.Content)
			g.Expect(err).NotTo(HaveOccurred())
			want["definition"].(map[string]any)["credential"] = map[string]any{"binding": "openai-api-key"}
			g.Expect(r.Bindings).To(Equal([]string{"openai-api-key"}))
		}
		g.Expect(pack.Fingerprint(r.Object)).To(Equal(pack.Fingerprint(want)), "%s: %v", r.Path, r.Object)
	}
	g.Expect(archive.Manifest.Definition.Bindings).To(ConsistOf(HaveField("Name", "openai-api-key")))
}

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }

func TestASelectedProfileAnAgentUsesIsNotLeftAsADependencyButBecomesABindingWhenRemoved(t *testing.T) {
	g := NewWithT(t)
	ws := objects(t, agent("sorter", "small"), profile("small", "models", ""), provider("models", ""))

	p := ws.compose(t, "Agent/sorter", "ModelProfile/small")
	g.Expect(resource(p, "ModelProfile/small")).To(And(HaveField("RequiredBy", []string{"Agent/sorter"}), HaveField("LeaveAsDependency", false)))
	g.Expect(p.Bindings).To(BeEmpty())
	removed := ws.compose(t, "Agent/sorter")
	g.Expect(keysOf(removed)).To(Equal(map[string]string{"Agent/sorter": "direct"}))
	g.Expect(removed.Bindings).To(ConsistOf(HaveField("Name", "small")))
}

func TestBindingNamesAreValidAndDistinctWhateverTheNamesOfTheirTargets(t *testing.T) {
	g := NewWithT(t)
	long := "a." + strings.Repeat("x", 70)
	ws := objects(t, agent("sorter", "gpt.small"), agent("writer", long), agent("shared", "api-key"),
		profile("gpt.small", "models", ""), profile(long, "models", ""), profile("api-key", "models", ""), provider("models", "api-key"), secret)

	p := ws.compose(t, "Agent/sorter", "Agent/writer", "Agent/shared", "ModelProvider/models")
	g.Expect(p.Issues).To(BeEmpty())
	names := map[string]string{}
	for _, b := range p.Bindings {
		names[b.TargetKind+" "+b.target] = b.Name
		g.Expect(b.Name).To(MatchRegexp(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`))
		g.Expect(len(b.Name)).To(BeNumerically("<=", 63))
	}
	g.Expect(names).To(HaveLen(4))
	g.Expect(names["modelProfile gpt.small"]).To(Equal("gpt-small"))
	g.Expect(names["modelProfile api-key"]).NotTo(Equal(names["secret api-key"]), "a profile and a Secret of the same name get two bindings")
	_, a, err := p.Generate(coordinate)
	g.Expect(err).NotTo(HaveOccurred(), "pack.Read accepts the names")
	g.Expect(a.Manifest.Definition.Bindings).To(HaveLen(4))
}
