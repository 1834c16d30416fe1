package service_test

import (
	"net/http"
	"sync"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/tools/mcptest"
)

// tableToolEndpoint is the MCP server of the table's tool provider rows; it lives as long as the
// test binary.
var tableToolEndpoint = sync.OnceValue(func() *mcptest.HTTPServer { return mcptest.StartHTTP(mcptest.HTTPOptions{}) })

func tableToolProviderBody(name string) string {
	return toolProviderBody(name, httpProviderDefinition(tableToolEndpoint().Endpoint(), ""))
}

func tableToolBody(name string) string {
	return `{"apiVersion":"platform/v1","kind":"Tool","metadata":{"name":"` + name + `"},` +
		`"definition":{"provider":{"name":"table-tool-provider"},"toolName":"echo"}}`
}

// toolRows are the rows of the tools area.
func toolRows(rows map[string]tableRow) {
	kindRows(rows, "tool-provider", "/api/toolproviders", "table-tool-provider", tableToolProviderBody)
	kindRows(rows, "tool", "/api/tools", "table-tool", tableToolBody)
	rows["list-tool-provider-tools"] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(200), get("/api/toolproviders/table-tool-provider/tools")}
	// Discovery and the connectivity test contact the provider: each role's call gets a provider
	// of its own at the table's MCP server.
	for id, suffix := range map[string]string{"refresh-tool-provider-tools": "/tools/refresh", "test-tool-provider": "/test"} {
		rows[id] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(200), func(f *tableFixture, r role) tableRequest {
			name := id + "-" + r.String()
			f.fresh("/api/toolproviders", name, tableToolProviderBody(name))
			return tableRequest{method: http.MethodPost, path: "/api/toolproviders/" + name + suffix}
		}}
	}
	for _, verb := range []string{"enable", "disable"} {
		rows[verb+"-tool"] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(200), func(f *tableFixture, _ role) tableRequest {
			return tableRequest{method: http.MethodPost, path: "/api/tools/table-tool/" + verb, headers: []string{"If-Match", f.etag("/api/tools/table-tool")}}
		}}
	}
	rows["list-flow-run-tool-calls"] = tableRow{httpapi.PolicyRunsRead, workspaceRoles(200), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodGet, path: "/api/flowRuns/" + f.work().runID + "/tool-calls"}
	}}
}
