package tools

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/tools"
)

// ToolProvider is a ToolProvider in the spec's envelope.
type ToolProvider struct {
	APIVersion string                            `json:"apiVersion" enum:"platform/v1,platform.dev/v1" doc:"platform/v1 (platform.dev/v1 is accepted too)"`
	Kind       string                            `json:"kind" enum:"ToolProvider"`
	Metadata   httpapi.ResourceMetadata          `json:"metadata"`
	Definition platformv1.ToolProviderDefinition `json:"definition"`
	Status     *ToolProviderState                `json:"status,omitempty" readOnly:"true"`
}

// ToolProviderState is the observed state of a ToolProvider: its conditions, what the last
// discovery found, and the outcome of the last contact. Reading it never contacts the provider.
type ToolProviderState struct {
	httpapi.ResourceState
	ServerName        string      `json:"serverName,omitempty" doc:"The name the provider reported"`
	ServerVersion     string      `json:"serverVersion,omitempty" doc:"The version the provider reported"`
	ProtocolVersion   string      `json:"protocolVersion,omitempty" doc:"The MCP protocol version negotiated with the provider, or an extension's protocol version (2026-09-18)"`
	LastDiscoveryTime *time.Time  `json:"lastDiscoveryTime,omitempty" doc:"When tools were last discovered"`
	Tools             int32       `json:"tools" doc:"Tools discovered and still listed"`
	EnabledTools      int32       `json:"enabledTools" doc:"Tools of the provider that are enabled, as of the last discovery"`
	MissingTools      int32       `json:"missingTools" doc:"Tools the last discovery no longer found"`
	Connection        *Connection `json:"connection,omitempty" doc:"The outcome of the last contact"`
}

// Connection is the outcome of the platform's last contact with a provider.
type Connection struct {
	State              string     `json:"state" enum:"Connected,Failed"`
	Message            string     `json:"message,omitempty" doc:"Why the last contact failed"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
}

func (in ToolProvider) Meta() httpapi.ResourceMetadata { return in.Metadata }

func (in ToolProvider) Validate(pathName string) error {
	return httpapi.EnvelopeErrors(in.APIVersion, in.Metadata, pathName)
}

func timeFrom(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}

func toolProviderFrom(p *platformv1.ToolProvider) ToolProvider {
	st := &ToolProviderState{ResourceState: httpapi.StateFrom(p.Status.ResourceStatus), ServerName: p.Status.ServerName,
		ServerVersion: p.Status.ServerVersion, ProtocolVersion: p.Status.ProtocolVersion, LastDiscoveryTime: timeFrom(p.Status.LastDiscoveryTime),
		Tools: p.Status.Tools, EnabledTools: p.Status.EnabledTools, MissingTools: p.Status.MissingTools}
	if c := p.Status.Connection; c != nil {
		st.Connection = &Connection{State: string(c.State), Message: c.Message, LastTransitionTime: timeFrom(c.LastTransitionTime)}
	}
	return ToolProvider{APIVersion: httpapi.SpecAPIVersion, Kind: "ToolProvider", Metadata: httpapi.MetadataFrom(p.ObjectMeta),
		Definition: p.Definition, Status: st}
}

// ToolProviderTest is the result of a successful connectivity test.
type ToolProviderTest struct {
	Reachable           bool   `json:"reachable" doc:"The provider completed the MCP handshake and answered a ping, or an extension served its discovery document"`
	ServerName          string `json:"serverName,omitempty"`
	ServerVersion       string `json:"serverVersion,omitempty"`
	ProtocolVersion     string `json:"protocolVersion,omitempty"`
	LatencyMilliseconds int64  `json:"latencyMilliseconds" doc:"Time the test took"`
}

func (s *routes) registerToolProviders() {
	httpapi.KindRoutes[*platformv1.ToolProvider, ToolProvider]{
		Noun: "tool provider", Nouns: "tool providers", Article: "a", ID: "tool-provider", Path: "/api/toolproviders", Tag: tagToolProviders,
		NewObject:     httpapi.Fresh[platformv1.ToolProvider],
		NewList:       func() client.ObjectList { return &platformv1.ToolProviderList{} },
		ToBody:        toolProviderFrom,
		SetDefinition: func(p *platformv1.ToolProvider, in ToolProvider) { p.Definition = in.Definition },
		AfterDelete:   s.deleteToolsOf,
		CreateDescription: "Nothing is contacted or started: discovery is an explicit refresh. A STDIO provider's command must be one " +
			"the instance allows (Platform:Tools:AllowedCommands) to be started later.",
		DeleteDescription: "The Tools discovered at the provider are deleted with it; agents that list them report ToolNotFound.",
	}.Register(s.Server)

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "refresh-tool-provider-tools", Method: http.MethodPost, Path: "/api/toolproviders/{name}/tools/refresh",
		Tags: []string{tagToolProviders}, Summary: "Discover the tools of a tool provider",
		Description: "Connects to the provider (starting a STDIO provider's process), lists its tools and reconciles its Tool objects: " +
			"a new tool becomes a disabled Tool, a listed one is Available with the provider's description and input schema, one no " +
			"longer listed is Missing. Nothing is ever enabled by a refresh. A provider that cannot be used as declared is 422, one " +
			"that fails or answers something that is not MCP (or not the extension protocol) 502, one that does not answer in time 504; the Problem detail never " +
			"holds a credential or the provider's output.",
		Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusBadGateway, http.StatusGatewayTimeout, http.StatusServiceUnavailable},
	}, httpapi.PolicyResourcesWrite), func(ctx context.Context, in *httpapi.NameInput) (*struct{ Body domain.Refresh }, error) {
		m, err := s.manager()
		if err != nil {
			return nil, err
		}
		p := &platformv1.ToolProvider{}
		if err := s.GetIn(ctx, in.Name, p); err != nil {
			return nil, err
		}
		out, err := m.Refresh(ctx, p)
		if err != nil {
			return nil, providerProblem(err)
		}
		return &struct{ Body domain.Refresh }{Body: out}, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "test-tool-provider", Method: http.MethodPost, Path: "/api/toolproviders/{name}/test",
		Tags: []string{tagToolProviders}, Summary: "Test the connectivity of a tool provider",
		Description: "Connects to the provider (or uses its open session) and pings it; changes no Tool. Failures are Problem " +
			"Details as for a refresh.",
		Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusBadGateway, http.StatusGatewayTimeout, http.StatusServiceUnavailable},
	}, httpapi.PolicyResourcesWrite), func(ctx context.Context, in *httpapi.NameInput) (*struct{ Body ToolProviderTest }, error) {
		m, err := s.manager()
		if err != nil {
			return nil, err
		}
		p := &platformv1.ToolProvider{}
		if err := s.GetIn(ctx, in.Name, p); err != nil {
			return nil, err
		}
		start := time.Now()
		info, err := m.Test(ctx, p)
		if err != nil {
			return nil, providerProblem(err)
		}
		return &struct{ Body ToolProviderTest }{Body: ToolProviderTest{Reachable: true, ServerName: info.Name, ServerVersion: info.Version,
			ProtocolVersion: info.ProtocolVersion, LatencyMilliseconds: time.Since(start).Milliseconds()}}, nil
	})

	httpapi.ReadOf(s.Server, huma.Operation{
		OperationID: "list-tool-provider-tools", Path: "/api/toolproviders/{name}/tools", Tags: []string{tagToolProviders},
		Summary:     "List the tools discovered at a tool provider",
		Description: "The Tool objects of the provider, as the last discovery left them; the provider is never contacted.",
	}, httpapi.Fresh[platformv1.ToolProvider], func(ctx context.Context, p *platformv1.ToolProvider) (httpapi.Items[Tool], error) {
		all, err := httpapi.ListNamespace[*platformv1.Tool](ctx, s.Server, p.Namespace, &platformv1.ToolList{})
		var out []Tool
		for _, t := range all {
			if string(t.Definition.Provider.Name) == p.Name {
				out = append(out, toolFrom(t))
			}
		}
		return httpapi.ItemsOf(out), err
	})
}

// deleteToolsOf deletes the Tools a deleted provider owned, and ends its session.
func (s *routes) deleteToolsOf(ctx context.Context, p *platformv1.ToolProvider) error {
	if s.Tools() != nil {
		s.Tools().Forget(p.Namespace, p.Name)
	}
	return httpapi.DeleteOwned(ctx, s.Server, p.Namespace, &platformv1.ToolList{}, func(t *platformv1.Tool) bool {
		return string(t.Definition.Provider.Name) == p.Name
	})
}
