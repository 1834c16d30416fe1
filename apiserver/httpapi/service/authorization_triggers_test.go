package service_test

import (
	"fmt"
	"net/http"

	"platform.dev/platform/apiserver/httpapi"
)

// triggerRows are the rows of the Triggers routes, for both route families (the namespaced one
// through the default resource namespace): reads for every role of the workspace, writes for
// Owner and Admin, Run now for whoever may start runs, the history for whoever may read runs.
func triggerRows(rows map[string]tableRow) {
	body := func(name string) string { return tableTriggerBody(name) }
	for prefix, suffix := range map[string]string{"/api/triggers": "", "/api/namespaces/default/triggers": "-in-namespace"} {
		item := prefix + "/table-trigger"
		rows["list-triggers"+suffix] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(200), get(prefix)}
		rows["get-trigger"+suffix] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(200), get(item)}
		rows["create-trigger"+suffix] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(201), func(_ *tableFixture, r role) tableRequest {
			return tableRequest{method: http.MethodPost, path: prefix, body: body("created" + suffix + "-by-" + r.String())}
		}}
		rows["replace-trigger"+suffix] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(200), func(f *tableFixture, _ role) tableRequest {
			return tableRequest{method: http.MethodPut, path: item, body: body("table-trigger"), headers: []string{"If-Match", f.etag(item)}}
		}}
		rows["delete-trigger"+suffix] = tableRow{httpapi.PolicyResourcesDelete, ownersAndAdmins(204), func(f *tableFixture, r role) tableRequest {
			name := "deleted" + suffix + "-by-" + r.String()
			return tableRequest{method: http.MethodDelete, path: prefix + "/" + name, headers: f.fresh(prefix, name, body(name))}
		}}
		for _, op := range []string{"enable", "disable"} {
			rows[op+"-trigger"+suffix] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(200), func(*tableFixture, role) tableRequest {
				return tableRequest{method: http.MethodPost, path: item + "/" + op}
			}}
		}
		rows["run-trigger"+suffix] = tableRow{httpapi.PolicyRunsExecute, runsExecute(202), func(_ *tableFixture, r role) tableRequest {
			return tableRequest{method: http.MethodPost, path: item + "/run", headers: []string{"Idempotency-Key", fmt.Sprintf("table%s-%s", suffix, r)}}
		}}
		rows["list-trigger-occurrences"+suffix] = tableRow{httpapi.PolicyRunsRead, workspaceRoles(200), get(item + "/occurrences")}
	}
	rows["preview-trigger-schedule"] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(200), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/triggers/preview", body: `{"schedule":` + weekdayMornings + `,"count":3}`}
	}}
}

// tableTriggerBody is a Trigger of the table's Flow, at its published version.
func tableTriggerBody(name string) string {
	return triggerBodyFor(name, `{"name":"table-flow","version":"1.0.0"}`, weekdayMornings, "")
}
