package v1_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/testenv"
)

// The tests of this file run the CRDs generated from the types against the real control plane:
// they create objects through the dynamic client and check what the apiserver accepts, refuses
// and defaults.

const testNamespace = "validation"

var (
	env    *testenv.Env
	mapper meta.RESTMapper
	// platform is the platform's own client: only the platform writes FlowVersions and
	// PublishedEntries, so their schema is checked on what it writes.
	platform dynamic.Interface
)

// platformWritten are the kinds the kube API accepts from the platform only.
var platformWritten = map[string]bool{"FlowVersion": true, "PublishedEntry": true}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// Start applies every embedded CRD and waits until each is Established: a CRD the server
	// refuses (a CEL cost error, ...) makes it time out here.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if env, err = testenv.Start(ctx, testenv.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, "control plane:", err)
		return 1
	}
	defer env.Stop()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, "namespace:", err)
		return 1
	}
	mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(env.Kube.Discovery()))
	if platform, err = dynamic.NewForConfig(env.Platform); err != nil {
		fmt.Fprintln(os.Stderr, "platform client:", err)
		return 1
	}
	return m.Run()
}

// resource returns the dynamic client of obj's kind, namespaced in namespace when the kind is.
func resource(obj *unstructured.Unstructured, namespace string) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	client := env.Dynamic
	if platformWritten[gvk.Kind] {
		client = platform
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		obj.SetNamespace(namespace)
		return client.Resource(mapping.Resource).Namespace(namespace), nil
	}
	return client.Resource(mapping.Resource), nil
}

func decode(manifest string) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		return nil, err
	}
	return obj, nil
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// nameFor derives a unique object name from a test case name.
func nameFor(caseName string) string {
	slug := strings.Trim(nonName.ReplaceAllString(strings.ToLower(caseName), "-"), "-")
	if len(slug) > 40 {
		slug = strings.TrimRight(slug[:40], "-")
	}
	h := fnv.New32a()
	h.Write([]byte(caseName))
	return fmt.Sprintf("%s-%08x", slug, h.Sum32())
}

// strict refuses unknown fields instead of pruning them.
var (
	strictCreate = metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	strictUpdate = metav1.UpdateOptions{FieldValidation: metav1.FieldValidationStrict}
)

// expectInvalid checks that err is a 422 naming field, with message in its text.
func expectInvalid(g Gomega, err error, field, message string) {
	g.Expect(err).To(HaveOccurred(), "the apiserver accepted the object")
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got: %v", err)
	var status apierrors.APIStatus
	g.Expect(errors.As(err, &status)).To(BeTrue())
	var fields []string
	for _, cause := range status.Status().Details.Causes {
		fields = append(fields, cause.Field)
	}
	g.Expect(fields).To(ContainElement(field), "error: %v", err)
	g.Expect(err.Error()).To(ContainSubstring(message))
}

// ruleCase is one rule of the schema: object is created; when update is set, it must be created
// and then updated with update (same name). An empty invalidField and unknownField mean the last
// write must succeed.
type ruleCase struct {
	object       string
	update       string
	invalidField string
	message      string
	unknownField string
}

func TestValidationRules(t *testing.T) {
	cases := map[string]ruleCase{
		// Entry
		"an Entry binds exactly one of agent and flow: both is refused": {
			object:       entry(`binding: {agent: {name: a}, flow: {name: f}}`),
			invalidField: "definition.binding",
			message:      "binding selects exactly one of agent and flow",
		},
		"an Entry binds exactly one of agent and flow: neither is refused": {
			object:       entry(`binding: {}`),
			invalidField: "definition.binding",
			message:      "binding selects exactly one of agent and flow",
		},
		"an Entry binds exactly one of agent and flow: a flow is accepted": {
			object: entry(`binding: {flow: {name: f, namespace: acme.kit, version: 1.0.0}}`),
		},
		"an Entry continuation binds exactly one of agent and flow": {
			object:       entry("binding: {agent: {name: a}}\n  continuation: {}"),
			invalidField: "definition.continuation",
			message:      "binding selects exactly one of agent and flow",
		},
		"an Entry has at most one PrimaryInput field": {
			object:       entry("binding: {agent: {name: a}}\n  fields: [{name: a, role: PrimaryInput}, {name: b, role: PrimaryInput}]"),
			invalidField: "definition.fields",
			message:      "at most one field has the role PrimaryInput",
		},
		"an Entry field name is unique": {
			object:       entry("binding: {agent: {name: a}}\n  fields: [{name: a}, {name: a}]"),
			invalidField: "definition.fields[1]",
			message:      "Duplicate value",
		},
		"an Entry task display is Visible Hidden or Auto": {
			object:       entry("binding: {agent: {name: a}}\n  task: {display: Sometimes}"),
			invalidField: "definition.task.display",
			message:      "Unsupported value",
		},
		"an Entry exposure surface is Workplace or Console": {
			object:       entry("binding: {agent: {name: a}}\n  exposure: {surfaces: [Mobile]}"),
			invalidField: "definition.exposure.surfaces[0]",
			message:      "Unsupported value",
		},
		"an Entry follow-up policy is Enqueue Reject or Interrupt": {
			object:       entry("binding: {agent: {name: a}}\n  followUps: {policy: Queue}"),
			invalidField: "definition.followUps.policy",
			message:      "Unsupported value",
		},
		"an Entry console role is Fallback": {
			object:       entry("binding: {agent: {name: a}}\n  consoleRoles: [Default]"),
			invalidField: "definition.consoleRoles[0]",
			message:      "Unsupported value",
		},

		// PublishedEntry
		"published PublishedEntry definitions are immutable": {
			object:       publishedEntry("displayName: First"),
			update:       publishedEntry("displayName: Second"),
			invalidField: "definition",
			message:      "published versions are immutable",
		},
		"a PublishedEntry has no binding field": {
			object:       publishedEntry("binding: {agent: {name: a}}"),
			unknownField: "definition.binding",
		},
		"a PublishedEntry pins an exact Flow version": {
			object: `
apiVersion: platform.dev/v1
kind: PublishedEntry
definition:
  ownerWorkspaceId: w1
  resolvedTarget: {name: f}`,
			invalidField: "definition.resolvedTarget.version",
			message:      "Required value",
		},
		"a PublishedEntry target version is a strict semantic version": {
			object: `
apiVersion: platform.dev/v1
kind: PublishedEntry
definition:
  ownerWorkspaceId: w1
  resolvedTarget: {name: f, version: "1.0"}`,
			invalidField: "definition.resolvedTarget.version",
			message:      "should match",
		},

		// Flow and FlowVersion
		"published FlowVersion definitions are immutable": {
			object:       flowVersion("1.0.0", "description: first"),
			update:       flowVersion("1.0.0", "description: second"),
			invalidField: "definition",
			message:      "published versions are immutable",
		},
		"a FlowVersion's labels may change": {
			object: flowVersion("1.0.0", "description: first"),
			update: strings.Replace(flowVersion("1.0.0", "description: first"), "metadata: {}", "metadata: {labels: {stage: old}}", 1),
		},
		"a FlowVersion version is a strict semantic version: no v prefix": {
			object:       flowVersion("v1.0.0", ""),
			invalidField: "definition.version",
			message:      "should match",
		},
		"a FlowVersion version is a strict semantic version: no leading zero": {
			object:       flowVersion("1.02.0", ""),
			invalidField: "definition.version",
			message:      "should match",
		},
		"a FlowVersion version is a strict semantic version: pre-release and build accepted": {
			object: flowVersion("1.0.0-rc.1+build.7", ""),
		},
		"a FlowVersion snapshot version equals its version": {
			object:       flowVersion("1.0.0", "version: 2.0.0"),
			invalidField: "definition.snapshot.version",
			message:      "snapshot.version, when set, equals version",
		},
		"a Flow version is a strict semantic version": {
			object:       flow("flowKind: Direct\n  version: \"1.0\"\n  target: {kind: Agent, id: a}"),
			invalidField: "definition.version",
			message:      "should match",
		},
		"a Direct Flow needs a target": {
			object:       flow("flowKind: Direct"),
			invalidField: "definition.target",
			message:      "a Direct flow needs a target",
		},
		"a Direct Flow has no steps": {
			object:       flow("flowKind: Direct\n  target: {kind: Agent, id: a}\n  steps: [{name: in, type: Input}]"),
			invalidField: "definition.steps",
			message:      "a Direct flow has no steps or edges",
		},
		"an Orchestration Flow needs steps": {
			object:       flow("flowKind: Orchestration"),
			invalidField: "definition.steps",
			message:      "an Orchestration flow needs steps",
		},
		"a Flow kind is Direct or Orchestration": {
			object:       flow("flowKind: Parallel"),
			invalidField: "definition.flowKind",
			message:      "Unsupported value",
		},
		"a Flow step name is unique": {
			object:       flow("flowKind: Orchestration\n  steps: [{name: in, type: Input}, {name: in, type: Output}]"),
			invalidField: "definition.steps[1]",
			message:      "Duplicate value",
		},
		"a Flow step name is a DNS label": {
			object:       flow("flowKind: Orchestration\n  steps: [{name: Read_Input, type: Input}]"),
			invalidField: "definition.steps[0].name",
			message:      "should match",
		},
		"a Flow step type is one of the executor's": {
			object:       flow("flowKind: Orchestration\n  steps: [{name: loop, type: Loop}]"),
			invalidField: "definition.steps[0].type",
			message:      "Unsupported value",
		},
		"an Agent step names its agent": {
			object:       flow("flowKind: Orchestration\n  steps: [{name: ask, type: Agent}]"),
			invalidField: "definition.steps[0].agent",
			message:      "agent is set on Agent steps and only on them",
		},
		"a Condition step has an expression": {
			object:       flow("flowKind: Orchestration\n  steps: [{name: check, type: Condition}]"),
			invalidField: "definition.steps[0].expression",
			message:      "Condition and Transform steps need an expression",
		},
		"a Choice suspension lists choices": {
			object:       flow("flowKind: Orchestration\n  steps: [{name: in, type: Input, suspend: {kind: Choice, prompt: 'Which?'}}]"),
			invalidField: "definition.steps[0].suspend.choices",
			message:      "a Choice suspension lists choices",
		},
		"every Flow edge connects two steps": {
			object:       flow("flowKind: Orchestration\n  steps: [{name: in, type: Input}]\n  edges: [{from: in, to: out}]"),
			invalidField: "definition.edges",
			message:      "every edge connects two steps of the flow",
		},
		"an Orchestration Flow graph is accepted": {
			object: flow(orchestration),
		},

		// Dashboard
		"a Dashboard has at most one Primary entry reference": {
			object:       dashboard("[{name: a, role: Primary}, {name: b, role: Primary}]"),
			invalidField: "definition.entries",
			message:      "a Dashboard has at most one Primary entry reference",
		},
		"a Dashboard refers to each Entry once": {
			object:       dashboard("[{name: a, role: Featured}, {name: a, namespace: default}]"),
			invalidField: "definition.entries[1]",
			message:      "Duplicate value",
		},
		"a Dashboard may show same-named Entries of two namespaces": {
			object: dashboard("[{name: a, role: Primary}, {name: a, namespace: acme.kit, role: Featured}]"),
		},
		"a Dashboard entry role is Primary Featured or Standard": {
			object:       dashboard("[{name: a, role: Hero}]"),
			invalidField: "definition.entries[0].role",
			message:      "Unsupported value",
		},

		// Trigger
		"a Trigger schedule type is once interval or cron": {
			object:       trigger("weekly", "0 7 * * 1", "UTC"),
			invalidField: "definition.source.schedule.type",
			message:      "Unsupported value",
		},
		"a Trigger time zone is not empty": {
			object:       trigger("cron", "0 7 * * 1", ""),
			invalidField: "definition.source.schedule.timeZone",
			message:      "at least 1 chars long",
		},
		"a cron schedule has five fields": {
			object:       trigger("cron", "0 7 * *", "UTC"),
			invalidField: "definition.source.schedule.expression",
			message:      "a cron schedule has five fields",
		},
		"a cron schedule may be a descriptor": {
			object: trigger("cron", "@daily", "Europe/Paris"),
		},
		"an interval schedule is days.hh:mm:ss": {
			object:       trigger("interval", "5m", "UTC"),
			invalidField: "definition.source.schedule.expression",
			message:      "an interval schedule is a duration",
		},
		"a once schedule is a local date and time": {
			object:       trigger("once", "tomorrow", "UTC"),
			invalidField: "definition.source.schedule.expression",
			message:      "a once schedule is a local date and time",
		},
		"a Trigger names its target flow": {
			object: `
apiVersion: platform.dev/v1
kind: Trigger
definition:
  source: {schedule: {type: once, expression: "2030-01-31T09:00:00", timeZone: UTC}}
  target: {kind: flow}`,
			invalidField: "definition.target.flow",
			message:      "a flow target names the flow",
		},
		"a Trigger input is a free-form object": {
			object: strings.Replace(trigger("interval", "1.00:00:00", "UTC"), "input: {}", "input: {request: hello, options: {depth: 3, tags: [a, b]}}", 1),
		},
		"a Trigger input is an object": {
			object:       strings.Replace(trigger("interval", "01:00:00", "UTC"), "input: {}", "input: hello", 1),
			invalidField: "definition.target.input",
			message:      "must be of type object",
		},
		"a Trigger misfire policy is fireOnce, fireAll or skip": {
			object:       strings.Replace(trigger("interval", "01:00:00", "UTC"), "input: {}", "input: {}\n  misfirePolicy: sometimes", 1),
			invalidField: "definition.misfirePolicy",
			message:      "Unsupported value",
		},
		"a Trigger may fire every missed instant": {
			object: strings.Replace(trigger("interval", "01:00:00", "UTC"), "input: {}", "input: {}\n  misfirePolicy: fireAll\n  catchUpLimit: 100", 1),
		},
		"a Trigger concurrency policy is skip, allow or replace": {
			object:       strings.Replace(trigger("interval", "01:00:00", "UTC"), "input: {}", "input: {}\n  concurrencyPolicy: queue", 1),
			invalidField: "definition.concurrencyPolicy",
			message:      "Unsupported value",
		},
		"a Trigger catch-up window is a duration": {
			object:       strings.Replace(trigger("interval", "01:00:00", "UTC"), "input: {}", "input: {}\n  catchUpWindow: 1h", 1),
			invalidField: "definition.catchUpWindow",
			message:      "should match",
		},
		"a Trigger catch-up limit is positive": {
			object:       strings.Replace(trigger("interval", "01:00:00", "UTC"), "input: {}", "input: {}\n  catchUpLimit: 0", 1),
			invalidField: "definition.catchUpLimit",
			message:      "should be greater than or equal to 1",
		},

		// Secret and Vault
		"Secret has no value field": {
			object:       secret("value: hunter2"),
			unknownField: "definition.value",
		},
		"a Secret type is opaque": {
			object:       secret("type: password"),
			invalidField: "definition.type",
			message:      "Unsupported value",
		},
		"a Secret vaultKey stays inside the Vault": {
			object:       secret("vaultKey: ../other"),
			invalidField: "definition.vaultKey",
			message:      "should match",
		},
		"a Secret vaultKey may be a path": {
			object: secret("vaultKey: team/support/openai"),
		},
		"a scopeRef is /instance /tenants/id or /workspaces/id": {
			object:       secret("usePolicy: {grants: [{scopeRef: /projects/p1}]}"),
			invalidField: "definition.usePolicy.grants[0].scopeRef",
			message:      "should match",
		},
		"a scopeRef of each form is accepted": {
			object: secret("usePolicy: {grants: [{scopeRef: /instance}, {scopeRef: /tenants/t1, includeDescendants: true}, {scopeRef: /workspaces/w-1}]}"),
		},
		"a usePolicy grants a scope once": {
			object:       secret("usePolicy: {grants: [{scopeRef: /tenants/t1}, {scopeRef: /tenants/t1}]}"),
			invalidField: "definition.usePolicy.grants[1]",
			message:      "Duplicate value",
		},
		"a Vault provider is Local": {
			object:       "apiVersion: platform.dev/v1\nkind: Vault\ndefinition: {provider: AzureKeyVault}",
			invalidField: "definition.provider",
			message:      "Unsupported value",
		},

		// Model providers, models, profiles
		"a ModelProvider type is one of the adapters": {
			object:       modelProvider("type: Anthropic\n  endpoint: https://api.example.com"),
			invalidField: "definition.type",
			message:      "Unsupported value",
		},
		"a ModelProvider other than Deterministic needs an endpoint": {
			object:       modelProvider("type: OpenAICompatible"),
			invalidField: "definition.endpoint",
			message:      "every provider type but Deterministic needs an endpoint",
		},
		"a Deterministic ModelProvider needs no endpoint": {
			object: modelProvider("type: Deterministic"),
		},
		"a ModelProvider endpoint is an http or https URL": {
			object:       modelProvider("type: Ollama\n  endpoint: ftp://models.example.com"),
			invalidField: "definition.endpoint",
			message:      "endpoint is an absolute http or https URL",
		},
		"ModelProvider specificationOverrides are keyed by model id": {
			object:       modelProvider("type: Deterministic\n  specificationOverrides: [{modelId: m, specification: {}}, {modelId: m, specification: {}}]"),
			invalidField: "definition.specificationOverrides[1]",
			message:      "Duplicate value",
		},
		"a Model's provider and modelId never change": {
			object:       "apiVersion: platform.dev/v1\nkind: Model\ndefinition: {provider: {name: p}, modelId: m1}",
			update:       "apiVersion: platform.dev/v1\nkind: Model\ndefinition: {provider: {name: p}, modelId: m2}",
			invalidField: "definition",
			message:      "a Model's provider and modelId never change",
		},
		"a ModelProfile refers to one provider": {
			object:       modelProfile(`modelId: m`),
			invalidField: "definition.provider",
			message:      "Required value",
		},
		"a ModelProfile temperature is a decimal string from 0 to 2": {
			object:       modelProfile(`provider: {name: p}` + "\n  generation: {temperature: \"2.5\"}"),
			invalidField: "definition.generation.temperature",
			message:      "should match",
		},
		"a ModelProfile temperature is not a float": {
			object:       modelProfile(`provider: {name: p}` + "\n  generation: {temperature: 0.7}"),
			invalidField: "definition.generation.temperature",
			message:      "must be of type string",
		},
		"a ModelProfile reasoning effort is an enum": {
			object:       modelProfile(`provider: {name: p}` + "\n  reasoning: {effort: Extreme}"),
			invalidField: "definition.reasoning.effort",
			message:      "Unsupported value",
		},
		"a ModelProfile JsonSchema output carries its schema": {
			object:       modelProfile(`provider: {name: p}` + "\n  output: {format: JsonSchema}"),
			invalidField: "definition.output.jsonSchema",
			message:      "jsonSchema is set exactly when format is JsonSchema",
		},
		"ModelProfile providerOptions are keyed by provider": {
			object:       modelProfile(`provider: {name: p}` + "\n  providerOptions: [{provider: Ollama, options: {a: 1}}, {provider: Ollama, options: {b: 2}}]"),
			invalidField: "definition.providerOptions[1]",
			message:      "Duplicate value",
		},
		"an Agent model profile names exactly one of name and resourceId": {
			object:       "apiVersion: platform.dev/v1\nkind: Agent\ndefinition: {modelProfile: {name: a, resourceId: b}}",
			invalidField: "definition.modelProfile",
			message:      "modelProfile names exactly one of name and resourceId",
		},

		// Tools
		"a ToolProvider transport matches its settings": {
			object:       "apiVersion: platform.dev/v1\nkind: ToolProvider\ndefinition: {protocol: MCP, transport: Stdio, http: {url: https://tools.example.com/mcp}}",
			invalidField: "definition.stdio",
			message:      "stdio is set exactly when transport is Stdio",
		},
		"a ToolProvider over HTTP with a bearer names its Secret": {
			object:       "apiVersion: platform.dev/v1\nkind: ToolProvider\ndefinition: {protocol: MCP, transport: StreamableHttp, http: {url: https://tools.example.com/mcp, authenticationMode: StaticBearer}}",
			invalidField: "definition.http.credential",
			message:      "credential is set exactly when authenticationMode is StaticBearer",
		},
		"a ToolProvider over HTTP with a bearer is accepted": {
			object: "apiVersion: platform.dev/v1\nkind: ToolProvider\ndefinition: {protocol: Extension, transport: StreamableHttp, http: {url: https://tools.example.com/aep, authenticationMode: StaticBearer, credential: {name: tools-token, scopeRef: /tenants/t1}}}",
		},
		"an Extension ToolProvider is an HTTP service": {
			object:       "apiVersion: platform.dev/v1\nkind: ToolProvider\ndefinition: {protocol: Extension, transport: Stdio, stdio: {command: /opt/ext}}",
			invalidField: "definition.transport",
			message:      "an Extension provider is an HTTP service: its transport is StreamableHttp",
		},
		"only an Extension ToolProvider binds Secrets to roles": {
			object:       "apiVersion: platform.dev/v1\nkind: ToolProvider\ndefinition: {protocol: MCP, transport: StreamableHttp, http: {url: https://tools.example.com/mcp}, extension: {secrets: [{role: api-key, secret: {name: k}}]}}",
			invalidField: "definition.extension",
			message:      "extension is set only when protocol is Extension",
		},
		"an Extension ToolProvider binds each role once": {
			object:       "apiVersion: platform.dev/v1\nkind: ToolProvider\ndefinition: {protocol: Extension, transport: StreamableHttp, http: {url: https://tools.example.com}, extension: {secrets: [{role: api-key, secret: {name: a}}, {role: api-key, secret: {name: b}}]}}",
			invalidField: "definition.extension.secrets[1]",
			message:      "Duplicate value",
		},
		"an Extension ToolProvider binding Secrets to roles is accepted": {
			object: "apiVersion: platform.dev/v1\nkind: ToolProvider\ndefinition: {protocol: Extension, transport: StreamableHttp, http: {url: https://tools.example.com}, extension: {secrets: [{role: weather-api-key, secret: {name: k, scopeRef: /tenants/t1}}]}}",
		},
		"a Tool's provider and toolName never change": {
			object:       "apiVersion: platform.dev/v1\nkind: Tool\ndefinition: {provider: {name: p}, toolName: search}",
			update:       "apiVersion: platform.dev/v1\nkind: Tool\ndefinition: {provider: {name: p}, toolName: delete, enabled: true}",
			invalidField: "definition",
			message:      "a Tool's provider and toolName never change",
		},

		// SourceRegistry
		"a SourceRegistry trust policy is untrusted trusted or authoritative": {
			object:       sourceRegistry("indexUrl: https://registry.example.com/index.json\n  trustPolicy: official"),
			invalidField: "definition.trustPolicy",
			message:      "Unsupported value",
		},
		"a SourceRegistry indexUrl has no credentials query fragment or percent-encoding": {
			object:       sourceRegistry("indexUrl: https://user:pass@registry.example.com/index.json?x=1"),
			invalidField: "definition.indexUrl",
			message:      "indexUrl has no credentials, query, fragment or percent-encoding",
		},
		"an http SourceRegistry index needs allowHttp": {
			object:       sourceRegistry("indexUrl: http://registry.example.com/index.json"),
			invalidField: "definition.indexUrl",
			message:      "an http:// indexUrl needs endpointPolicy.allowHttp",
		},
		"an http SourceRegistry index with allowHttp is accepted": {
			object: sourceRegistry("indexUrl: http://registry.internal/index.json\n  endpointPolicy: {allowHttp: true, allowPrivateNetwork: true}"),
		},
		"a SourceRegistry duration is days.hh:mm:ss": {
			object:       sourceRegistry("indexUrl: https://registry.example.com/index.json\n  refreshPolicy: {interval: 5m}"),
			invalidField: "definition.refreshPolicy.interval",
			message:      "should match",
		},
		"a staticBearer SourceRegistry names its credential": {
			object:       sourceRegistry("indexUrl: https://registry.example.com/index.json\n  authenticationMode: staticBearer"),
			invalidField: "definition.credential",
			message:      "credential is set exactly when authenticationMode is staticBearer",
		},
		"a SourceRegistry credential is an instance-scoped Secret": {
			object:       sourceRegistry("indexUrl: https://registry.example.com/index.json\n  authenticationMode: staticBearer\n  credential: {name: token, scopeRef: /workspaces/w1}"),
			invalidField: "definition.credential.scopeRef",
			message:      "a registry credential is an instance-scoped Secret",
		},
		"a SourceRegistry maximumAttempts is bounded": {
			object:       sourceRegistry("indexUrl: https://registry.example.com/index.json\n  refreshPolicy: {maximumAttempts: 0}"),
			invalidField: "definition.refreshPolicy.maximumAttempts",
			message:      "should be greater than or equal to 1",
		},

		// InstalledPack
		"a Pack publisher uses lowercase letters digits and hyphens": {
			object:       installedPack("Acme_Corp", "kit", "1.0.0"),
			invalidField: "definition.publisher",
			message:      "should match",
		},
		"a Pack name uses lowercase letters digits and hyphens": {
			object:       installedPack("acme", "Support.Kit", "1.0.0"),
			invalidField: "definition.name",
			message:      "should match",
		},
		"a Pack version is a strict semantic version": {
			object:       installedPack("acme", "kit", "1.0"),
			invalidField: "definition.version",
			message:      "should match",
		},
		"an InstalledPack is named publisher.name": {
			object:       strings.Replace(installedPack("acme", "kit", "1.0.0"), "name: acme.kit", "name: acme-kit", 1),
			invalidField: "definition",
			message:      "an InstalledPack is named publisher.name",
		},
		"an InstalledPack of acme/kit 2.0.0-beta.1 is accepted": {
			object: installedPack("acme", "kit", "2.0.0-beta.1"),
		},
	}

	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ctx := context.Background()
			obj, err := decode(tc.object)
			g.Expect(err).NotTo(HaveOccurred())
			if obj.GetName() == "" {
				obj.SetName(nameFor(name))
			}
			client, err := resource(obj, testNamespace)
			g.Expect(err).NotTo(HaveOccurred())
			created, err := client.Create(ctx, obj, strictCreate)
			if tc.update != "" {
				g.Expect(err).NotTo(HaveOccurred(), "create before update")
				updated, decodeErr := decode(tc.update)
				g.Expect(decodeErr).NotTo(HaveOccurred())
				updated.SetName(created.GetName())
				updated.SetNamespace(created.GetNamespace())
				updated.SetResourceVersion(created.GetResourceVersion())
				_, err = client.Update(ctx, updated, strictUpdate)
			}
			t.Logf("apiserver: %v", err)
			switch {
			case tc.unknownField != "":
				g.Expect(err).To(HaveOccurred(), "the apiserver accepted an unknown field")
				g.Expect(apierrors.IsBadRequest(err)).To(BeTrue(), "want 400 BadRequest, got: %v", err)
				g.Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("unknown field %q", tc.unknownField)))
			case tc.invalidField != "":
				expectInvalid(g, err, tc.invalidField, tc.message)
			default:
				g.Expect(err).NotTo(HaveOccurred())
			}
		})
	}
}

// TestSecretValueIsPrunedWithoutStrictValidation: a client that does not ask for strict field
// validation gets a warning, and the value is dropped, never stored.
func TestSecretValueIsPrunedWithoutStrictValidation(t *testing.T) {
	g := NewWithT(t)
	obj, err := decode(secret("value: hunter2"))
	g.Expect(err).NotTo(HaveOccurred())
	obj.SetName("pruned-value")
	client, err := resource(obj, testNamespace)
	g.Expect(err).NotTo(HaveOccurred())
	created, err := client.Create(context.Background(), obj, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, found, _ := unstructured.NestedFieldNoCopy(created.Object, "definition", "value")
	g.Expect(found).To(BeFalse(), "the value was stored")
}

// TestDefaults checks the defaults the spec names, as the apiserver applies them.
func TestDefaults(t *testing.T) {
	cases := map[string]struct {
		object string
		path   []string
		want   any
	}{
		"an Entry task display defaults to Auto": {
			object: entry(`binding: {agent: {name: a}}`), path: []string{"definition", "task", "display"}, want: "Auto",
		},
		"an Entry participants visibility defaults to Hidden": {
			object: entry(`binding: {agent: {name: a}}`), path: []string{"definition", "participants", "visibility"}, want: "Hidden",
		},
		"an Entry results display defaults to Auto": {
			object: entry(`binding: {agent: {name: a}}`), path: []string{"definition", "results", "display"}, want: "Auto",
		},
		"an Entry follow-up policy defaults to Enqueue": {
			object: entry(`binding: {agent: {name: a}}`), path: []string{"definition", "followUps", "policy"}, want: "Enqueue",
		},
		"an Entry is exposed in the Workplace by default": {
			object: entry(`binding: {agent: {name: a}}`), path: []string{"definition", "exposure", "surfaces"}, want: []any{"Workplace"},
		},
		"an Entry is placed in its owning space by default": {
			object: entry(`binding: {agent: {name: a}}`), path: []string{"definition", "exposure", "placement"}, want: "OwningSpace",
		},
		"an Entry field role defaults to Parameter": {
			object: entry("binding: {agent: {name: a}}\n  fields: [{name: a}]"), path: []string{"definition", "fields"},
			want: []any{map[string]any{"name": "a", "role": "Parameter", "type": "Text"}},
		},
		"a Dashboard entry reference defaults to the default namespace and the Standard role": {
			object: dashboard("[{name: a}]"), path: []string{"definition", "entries"},
			want: []any{map[string]any{"name": "a", "namespace": "default", "role": "Standard"}},
		},
		"a Tool is disabled by default": {
			object: "apiVersion: platform.dev/v1\nkind: Tool\ndefinition: {provider: {name: p}, toolName: search}",
			path:   []string{"definition", "enabled"}, want: false,
		},
		"a Flow is enabled by default": {
			object: flow("flowKind: Direct\n  target: {kind: Agent, id: a}"), path: []string{"definition", "enabled"}, want: true,
		},
		"a Trigger is enabled by default": {
			object: trigger("cron", "@hourly", "UTC"), path: []string{"definition", "enabled"}, want: true,
		},
		"a Trigger misfire policy defaults to fireOnce": {
			object: trigger("cron", "@hourly", "UTC"), path: []string{"definition", "misfirePolicy"}, want: "fireOnce",
		},
		"a Trigger concurrency policy defaults to skip": {
			object: trigger("cron", "@hourly", "UTC"), path: []string{"definition", "concurrencyPolicy"}, want: "skip",
		},
		"a Trigger catches up for an hour by default": {
			object: trigger("cron", "@hourly", "UTC"), path: []string{"definition", "catchUpWindow"}, want: "01:00:00",
		},
		"a Trigger fires at most ten missed instants at once by default": {
			object: trigger("cron", "@hourly", "UTC"), path: []string{"definition", "catchUpLimit"}, want: int64(10),
		},
		"a Trigger pauses after five consecutive failures by default": {
			object: trigger("cron", "@hourly", "UTC"), path: []string{"definition", "pauseAfterFailures"}, want: int64(5),
		},
		"a Secret type defaults to opaque": {
			object: secret(""), path: []string{"definition", "type"}, want: "opaque",
		},
		"a Vault provider defaults to Local": {
			object: "apiVersion: platform.dev/v1\nkind: Vault\ndefinition: {}", path: []string{"definition", "provider"}, want: "Local",
		},
		"a SourceRegistry requires HTTPS and public addresses by default": {
			object: sourceRegistry("indexUrl: https://registry.example.com/index.json"), path: []string{"definition", "endpointPolicy"},
			want: map[string]any{"allowHttp": false, "allowPrivateNetwork": false},
		},
		"a SourceRegistry refreshes periodically only when asked": {
			object: sourceRegistry("indexUrl: https://registry.example.com/index.json"), path: []string{"definition", "refreshPolicy", "periodicEnabled"}, want: false,
		},
		"a SourceRegistry is untrusted by default": {
			object: sourceRegistry("indexUrl: https://registry.example.com/index.json"), path: []string{"definition", "trustPolicy"}, want: "untrusted",
		},
		"a Pack audience defaults to universal": {
			object: installedPack("acme", "defaults", "1.0.0"), path: []string{"definition", "audience"}, want: "universal",
		},
		"a Pack purpose defaults to standard": {
			object: installedPack("acme", "defaults", "1.0.0"), path: []string{"definition", "purpose"}, want: "standard",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			obj, err := decode(tc.object)
			g.Expect(err).NotTo(HaveOccurred())
			if obj.GetName() == "" {
				obj.SetName(nameFor("defaults " + name))
			}
			client, err := resource(obj, testNamespace)
			g.Expect(err).NotTo(HaveOccurred())
			if obj.GetKind() == "InstalledPack" {
				// One installation per Pack: each case creates it in a server-side dry run.
				created, err := client.Create(context.Background(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				g.Expect(err).NotTo(HaveOccurred())
				got, _, _ := unstructured.NestedFieldNoCopy(created.Object, tc.path...)
				g.Expect(got).To(Equal(tc.want))
				return
			}
			created, err := client.Create(context.Background(), obj, strictCreate)
			g.Expect(err).NotTo(HaveOccurred())
			got, _, _ := unstructured.NestedFieldNoCopy(created.Object, tc.path...)
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

// TestEveryKindIsListedWithPlatform checks what `kubectl get platform` and `kubectl get <kind>`
// rely on: the category, a Ready and an Age column, and the status subresource.
func TestEveryKindIsListedWithPlatform(t *testing.T) {
	g := NewWithT(t)
	list, err := env.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().List(context.Background(), metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	var kinds []string
	for _, crd := range list.Items {
		if crd.Spec.Group != platformv1.GroupVersion.Group {
			continue
		}
		kinds = append(kinds, crd.Spec.Names.Kind)
		g.Expect(crd.Spec.Names.Categories).To(ContainElement("platform"), crd.Name)
		g.Expect(crd.Spec.Versions).To(HaveLen(1), crd.Name)
		version := crd.Spec.Versions[0]
		g.Expect(version.Subresources).NotTo(BeNil(), crd.Name)
		g.Expect(version.Subresources.Status).NotTo(BeNil(), crd.Name)
		var columns []string
		for _, c := range version.AdditionalPrinterColumns {
			columns = append(columns, c.Name)
		}
		g.Expect(columns).To(ContainElements("Ready", "Age"), crd.Name)
		status := version.Schema.OpenAPIV3Schema.Properties["status"]
		g.Expect(status.Properties).To(HaveKey("observedGeneration"), crd.Name)
		g.Expect(status.Properties).To(HaveKey("provisioning"), crd.Name)
		g.Expect(status.Properties["conditions"].MaxItems).To(HaveValue(BeEquivalentTo(16)), crd.Name)
	}
	sort.Strings(kinds)
	g.Expect(kinds).To(Equal([]string{
		"Agent", "Dashboard", "Entry", "Flow", "FlowVersion", "InstalledPack", "Model", "ModelProfile",
		"ModelProvider", "PublishedEntry", "RuntimeProfile", "Secret", "SourceRegistry", "Tool",
		"ToolProvider", "Trigger", "Vault",
	}))
}

// TestSamplesApply applies config/samples (one sample per kind people write, referring to each other) with
// server-side apply, as `kubectl apply --server-side -n <workspace> -f config/samples/` does.
func TestSamplesApply(t *testing.T) {
	const namespace = "samples"
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	_, err := env.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	files, err := filepath.Glob(filepath.Join("..", "..", "..", "config", "samples", "platform_v1_*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	kustomization, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "samples", "Kustomization"))
	g.Expect(err).NotTo(HaveOccurred())
	kinds := map[string]bool{}
	for _, file := range files {
		g.Expect(string(kustomization)).To(ContainSubstring("- "+filepath.Base(file)), "config/samples/Kustomization lists %s", file)
		data, err := os.ReadFile(file)
		g.Expect(err).NotTo(HaveOccurred())
		obj, err := decode(string(data))
		g.Expect(err).NotTo(HaveOccurred(), file)
		g.Expect(obj.GetAPIVersion()).To(Equal("platform.dev/v1"), file)
		g.Expect(obj.GetNamespace()).To(BeEmpty(), "%s is namespace-less", file)
		g.Expect(kinds).NotTo(HaveKey(obj.GetKind()), "one sample per kind: %s", file)
		kinds[obj.GetKind()] = true
		g.Expect(filepath.Base(file)).To(Equal("platform_v1_"+strings.ToLower(obj.GetKind())+".yaml"), file)
		g.Expect(platformWritten).NotTo(HaveKey(obj.GetKind()), "only the platform writes %s: kubectl cannot apply its sample", file)

		client, err := resource(obj, namespace)
		g.Expect(err).NotTo(HaveOccurred(), file)
		body, err := obj.MarshalJSON()
		g.Expect(err).NotTo(HaveOccurred())
		_, err = client.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{
			FieldManager:    "samples-test",
			FieldValidation: metav1.FieldValidationStrict,
		})
		g.Expect(err).NotTo(HaveOccurred(), file)
	}
	g.Expect(kinds).To(HaveLen(17-len(platformWritten)), "a sample for every kind people write")
}

// Manifest builders: the smallest valid object of a kind around the part a case changes.

func entry(definition string) string {
	return "apiVersion: platform.dev/v1\nkind: Entry\ndefinition:\n  " + definition
}

func publishedEntry(extra string) string {
	return `
apiVersion: platform.dev/v1
kind: PublishedEntry
definition:
  ownerWorkspaceId: w1
  resolvedTarget: {name: f, version: 1.0.0}
  ` + extra
}

func flow(definition string) string {
	return "apiVersion: platform.dev/v1\nkind: Flow\ndefinition:\n  " + definition
}

func flowVersion(version, snapshotExtra string) string {
	s := `
apiVersion: platform.dev/v1
kind: FlowVersion
metadata: {}
definition:
  flowName: f
  version: "` + version + `"
  snapshot:
    flowKind: Direct
    target: {kind: Agent, id: a}`
	if snapshotExtra != "" {
		s += "\n    " + snapshotExtra
	}
	return s
}

const orchestration = `flowKind: Orchestration
  version: 0.1.0
  steps:
  - {name: input, type: Input}
  - name: style
    type: Input
    suspend:
      kind: Choice
      prompt: "Which style?"
      choices: [{value: short, label: Short}, {value: detailed}]
  - {name: draft, type: Agent, agent: {name: writer}, prompt: "Write a {{ style }} answer to {{ input }}"}
  - {name: check, type: Condition, expression: "size(steps.draft.output) > 0"}
  - name: confirm
    type: Transform
    expression: "{'answer': steps.draft.output}"
    suspend: {kind: Confirmation, prompt: "Send this answer?"}
  - {name: done, type: Output}
  - {name: failed, type: Failure, message: The writer produced nothing}
  - {name: route, type: Router, expression: "input.kind"}
  edges:
  - {from: input, to: style}
  - {from: style, to: draft}
  - {from: draft, to: check}
  - {from: check, to: confirm, when: "true"}
  - {from: check, to: failed, when: "false"}
  - {from: confirm, to: done}`

func dashboard(entries string) string {
	return "apiVersion: platform.dev/v1\nkind: Dashboard\ndefinition:\n  entries: " + entries
}

func trigger(scheduleType, expression, timeZone string) string {
	return fmt.Sprintf(`
apiVersion: platform.dev/v1
kind: Trigger
definition:
  source: {kind: schedule, schedule: {type: %q, expression: %q, timeZone: %q}}
  target:
    kind: flow
    flow: {name: f}
    input: {}`, scheduleType, expression, timeZone)
}

func secret(extra string) string {
	return "apiVersion: platform.dev/v1\nkind: Secret\ndefinition:\n  vault: {name: local}\n  " + extra
}

func modelProvider(definition string) string {
	return "apiVersion: platform.dev/v1\nkind: ModelProvider\ndefinition:\n  " + definition
}

func modelProfile(definition string) string {
	return "apiVersion: platform.dev/v1\nkind: ModelProfile\ndefinition:\n  " + definition
}

func sourceRegistry(definition string) string {
	return "apiVersion: platform.dev/v1\nkind: SourceRegistry\ndefinition:\n  " + definition
}

func installedPack(publisher, name, version string) string {
	return fmt.Sprintf(`
apiVersion: platform.dev/v1
kind: InstalledPack
metadata: {name: %s.%s}
definition:
  publisher: %q
  name: %q
  version: %q
  source: {kind: Upload, fileName: pack.zip}`, objectName(publisher), objectName(name), publisher, name, version)
}

// objectName folds a Pack coordinate into a valid object name, so that a case checks the
// definition's rule rather than the name's.
func objectName(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "_", "-")
}
