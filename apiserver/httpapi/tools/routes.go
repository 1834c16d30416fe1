package tools

import (
	"errors"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/tools"
)

// Functional tags of the tools area in the OpenAPI document.
const (
	tagToolProviders = "Tool providers"
	tagTools         = "Tools"
)

// routes are the tools area's handlers over the shared core.
type routes struct {
	*httpapi.Server
	// mcpCalls bound the tool calls under way at /mcp, mcpRequests its requests per caller.
	mcpCalls    mcpLimits
	mcpRequests *domain.Slots
}

// Routes registers tool providers, tools, the tool calls of runs, and /mcp.
func Routes(s *httpapi.Server) {
	r := &routes{Server: s}
	s.AddTags(
		&huma.Tag{Name: tagToolProviders, Description: "Tool providers: MCP servers reached over STDIO or Streamable HTTP, and extensions of the extension protocol; discovery lists their tools."},
		&huma.Tag{Name: tagTools, Description: "Tools: discovered tools, disabled until enabled; agents call enabled ones through governed execution."},
	)
	r.registerToolProviders()
	r.registerTools()
	r.registerToolCalls()
	r.registerMCP()
	r.registerExtensions()
}

// manager is the tool provider manager, or 503 when the server has none.
func (s *routes) manager() (*domain.Manager, error) {
	if s.Tools() == nil {
		return nil, huma.Error503ServiceUnavailable("tool providers are not reachable from this server")
	}
	return s.Tools(), nil
}

// providerProblem turns the errors of reaching a provider into Problem Details: a provider that
// cannot be used as declared is 422, one that failed 502, one that did not answer in time 504.
// Their messages name the provider and what happened, never a credential or its output.
func providerProblem(err error) error {
	var (
		configErr   *domain.ConfigurationError
		unavailable *domain.UnavailableError
	)
	switch {
	case errors.As(err, &configErr):
		return huma.Error422UnprocessableEntity(configErr.Error())
	case errors.As(err, &unavailable) && unavailable.Timeout:
		return huma.Error504GatewayTimeout(unavailable.Error())
	case errors.As(err, &unavailable):
		return huma.Error502BadGateway(unavailable.Error())
	}
	return httpapi.Problem(err)
}
