package service_test

import (
	"net/http"

	"platform.dev/platform/apiserver/httpapi"
)

// usageRows are the route-role rows of the Usage area: every role of the workspace reads it.
func usageRows(rows map[string]tableRow) {
	rows["get-workspace-usage"] = tableRow{httpapi.PolicyRunsRead, workspaceRoles(200), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodGet, path: "/api/workspaces/" + f.ws.ID + "/usage?groupBy=day,agent"}
	}}
}
