package tool

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/secrets"
)

func TestSetReadyCondition(t *testing.T) {
	tests := map[string]struct {
		enabled, providerFound bool
		wantStatus             metav1.ConditionStatus
		wantReason             string
		wantMessage            string
	}{
		"an enabled tool of an existing provider is Resolved": {
			enabled: true, providerFound: true, wantStatus: metav1.ConditionTrue, wantReason: platformv1.ResolvedReason,
			wantMessage: `tool search of ToolProvider "knowledge-base" is enabled`,
		},
		"a disabled tool resolves and says it is Disabled": {
			providerFound: true, wantStatus: metav1.ConditionTrue, wantReason: platformv1.DisabledReason,
			wantMessage: `tool search of ToolProvider "knowledge-base" is disabled; agents may not call it until definition.enabled is true`,
		},
		"a tool without its provider is ToolProviderNotFound with the field path": {
			enabled: true, wantStatus: metav1.ConditionFalse, wantReason: platformv1.ToolProviderNotFoundReason,
			wantMessage: `definition.provider.name: ToolProvider "knowledge-base" not found`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			tool := &platformv1.Tool{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Definition: platformv1.ToolDefinition{
				Provider: platformv1.LocalObjectReference{Name: "knowledge-base"}, ToolName: "search", Enabled: tt.enabled}}
			setReadyCondition(&scope{tool: tool, providerFound: tt.providerFound})
			c := meta.FindStatusCondition(tool.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(Equal(tt.wantMessage))
			g.Expect(c.ObservedGeneration).To(Equal(int64(3)))
		})
	}
}

func TestValidateDefinition(t *testing.T) {
	tests := map[string]struct {
		def       platformv1.ToolProviderDefinition
		wantField string
	}{
		"a stdio provider with a command is valid": {
			def: platformv1.ToolProviderDefinition{Transport: platformv1.StdioTransport, Stdio: &platformv1.StdioTransportSettings{Command: "kb"}},
		},
		"a stdio provider needs a command": {
			def:       platformv1.ToolProviderDefinition{Transport: platformv1.StdioTransport, Stdio: &platformv1.StdioTransportSettings{}},
			wantField: "definition.stdio.command",
		},
		"a stdio provider needs stdio settings": {
			def:       platformv1.ToolProviderDefinition{Transport: platformv1.StdioTransport},
			wantField: "definition.stdio",
		},
		"an http provider with an https URL is valid": {
			def: platformv1.ToolProviderDefinition{Transport: platformv1.StreamableHTTPTransport, HTTP: &platformv1.HTTPTransportSettings{URL: "https://tools.example.com/mcp"}},
		},
		"an http provider needs an absolute URL": {
			def:       platformv1.ToolProviderDefinition{Transport: platformv1.StreamableHTTPTransport, HTTP: &platformv1.HTTPTransportSettings{URL: "/mcp"}},
			wantField: "definition.http.url",
		},
		"an http provider needs an http or https URL": {
			def:       platformv1.ToolProviderDefinition{Transport: platformv1.StreamableHTTPTransport, HTTP: &platformv1.HTTPTransportSettings{URL: "ftp://tools.example.com"}},
			wantField: "definition.http.url",
		},
		"an Extension provider is an HTTP service": {
			def: platformv1.ToolProviderDefinition{Protocol: platformv1.ExtensionProtocol, Transport: platformv1.StdioTransport,
				Stdio: &platformv1.StdioTransportSettings{Command: "ext"}},
			wantField: "definition.transport",
		},
		"StaticBearer needs a credential": {
			def: platformv1.ToolProviderDefinition{Transport: platformv1.StreamableHTTPTransport, HTTP: &platformv1.HTTPTransportSettings{
				URL: "https://tools.example.com/mcp", AuthenticationMode: platformv1.StaticBearerToolAuthentication}},
			wantField: "definition.http.credential",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			errs := validateDefinition(&tt.def, field.NewPath("definition"))
			if tt.wantField == "" {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(errs).To(HaveLen(1))
			g.Expect(errs[0].Field).To(Equal(tt.wantField))
		})
	}
}

func TestTheSecretsAnExtensionBindsToRolesAreResolvedForItsStatus(t *testing.T) {
	g := NewWithT(t)
	def := platformv1.ToolProviderDefinition{Protocol: platformv1.ExtensionProtocol, Transport: platformv1.StreamableHTTPTransport,
		HTTP: &platformv1.HTTPTransportSettings{URL: "https://ext.example.com", AuthenticationMode: platformv1.StaticBearerToolAuthentication,
			Credential: &platformv1.SecretReference{Name: "token"}},
		Extension: &platformv1.ExtensionSettings{Secrets: []platformv1.ExtensionSecretBinding{{Role: "api-key", Secret: platformv1.SecretReference{Name: "key"}}}}}
	var paths []string
	for _, r := range secretReferences(&def) {
		paths = append(paths, r.path.String()+"="+string(r.ref.Name))
	}
	g.Expect(paths).To(Equal([]string{"definition.http.credential=token", "definition.extension.secrets[0].secret=key"}))
}

func TestSetProviderReadyCondition(t *testing.T) {
	provider := func() *platformv1.ToolProvider {
		return &platformv1.ToolProvider{ObjectMeta: metav1.ObjectMeta{Generation: 5}, Definition: platformv1.ToolProviderDefinition{
			Protocol: platformv1.MCPProtocol, Transport: platformv1.StreamableHTTPTransport,
			HTTP: &platformv1.HTTPTransportSettings{URL: "https://tools.example.com/mcp"}}}
	}
	tests := map[string]struct {
		scope       providerScope
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		"an invalid definition is InvalidDefinition": {
			scope:      providerScope{provider: provider(), invalid: field.ErrorList{field.Invalid(field.NewPath("definition", "http", "url"), "/mcp", "must be an absolute http or https URL")}},
			wantStatus: metav1.ConditionFalse, wantReason: platformv1.InvalidDefinitionReason,
			wantMessage: "definition.http.url: must be an absolute http or https URL",
		},
		"a Secret that does not resolve reports the Resolver's reason and message": {
			scope: providerScope{provider: provider(), secretRefusal: &secrets.Refusal{Reason: platformv1.SecretNotFoundReason,
				Message: `definition.http.credential: Secret "token" not found`}},
			wantStatus: metav1.ConditionFalse, wantReason: platformv1.SecretNotFoundReason,
			wantMessage: `definition.http.credential: Secret "token" not found`,
		},
		"a complete definition is Resolved without contacting the provider": {
			scope:      providerScope{provider: provider()},
			wantStatus: metav1.ConditionTrue, wantReason: platformv1.ResolvedReason,
			wantMessage: "MCP provider at https://tools.example.com/mcp; connectivity is not checked",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			setProviderReadyCondition(&tt.scope)
			c := meta.FindStatusCondition(tt.scope.provider.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(Equal(tt.wantMessage))
			g.Expect(c.ObservedGeneration).To(Equal(int64(5)))
		})
	}
}

// A STDIO provider is started only with a command the instance allows: with another it is not
// Ready, and says why, instead of Ready until the first call fails.
func TestAStdioProviderWhoseCommandTheInstanceDoesNotRunIsNotReady(t *testing.T) {
	allowed := func(command string) bool { return command == "kb-mcp" }
	for name, tt := range map[string]struct {
		command        string
		commandAllowed func(string) bool
		wantStatus     metav1.ConditionStatus
		wantReason     string
	}{
		"an allowed command":                    {command: "kb-mcp", commandAllowed: allowed, wantStatus: metav1.ConditionTrue, wantReason: platformv1.ResolvedReason},
		"a command the instance does not run":   {command: "knowledge-base-mcp", commandAllowed: allowed, wantStatus: metav1.ConditionFalse, wantReason: platformv1.CommandNotAllowedReason},
		"a manager that does not know the list": {command: "knowledge-base-mcp", wantStatus: metav1.ConditionTrue, wantReason: platformv1.ResolvedReason},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			provider := &platformv1.ToolProvider{Definition: platformv1.ToolProviderDefinition{Protocol: platformv1.MCPProtocol,
				Transport: platformv1.StdioTransport, Stdio: &platformv1.StdioTransportSettings{Command: tt.command}}}
			provider.Generation = 2
			s := &providerScope{provider: provider}
			_, err := (&ProviderReconciler{CommandAllowed: tt.commandAllowed}).reconcileDefinition(context.Background(), s)
			g.Expect(err).NotTo(HaveOccurred())
			setProviderReadyCondition(s)
			c := meta.FindStatusCondition(provider.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			if tt.wantStatus == metav1.ConditionFalse {
				g.Expect(c.Message).To(ContainSubstring(`"knowledge-base-mcp" is not one the instance allows`))
			}
		})
	}
}
