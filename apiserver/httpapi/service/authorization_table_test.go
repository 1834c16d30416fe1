package service_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/provider/openaitest"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/internal/config"
)

// The callers of the route x role table. Every workspace-scoped request is made in the table's
// workspace; the non-member is Owner of another workspace of the same Tenant, and the Platform
// administrator holds no membership at all.
type role int

const (
	anonymous role = iota
	owner
	admin
	member
	viewer
	nonMember
	platformAdmin
	roleCount
)

var roleNames = [roleCount]string{"anonymous", "owner", "admin", "member", "viewer", "non-member", "platform-admin"}

func (r role) String() string { return roleNames[r] }

// statuses are the expected answers, in role order.
type statuses [roleCount]int

// The answers the roles get, by what the operation needs. Owner and Admin hold every permission
// the routes ask for; Member and Viewer hold workspaces/read, resources/read and runs/read
// (Member also runs/execute); the non-member is not found in the workspace; a Platform
// administrator holds every permission in every workspace.
func workspaceRoles(ok int) statuses  { return statuses{401, ok, ok, ok, ok, 404, ok} }
func ownersAndAdmins(ok int) statuses { return statuses{401, ok, ok, 403, 403, 404, ok} }
func platformAdminOnly(ok int) statuses {
	return statuses{401, 403, 403, 403, 403, 403, ok}
}
func anyInteractiveUser(ok int) statuses { return statuses{401, ok, ok, ok, ok, ok, ok} }

// tableModelEndpoint is the model endpoint of the table's discovery rows; it lives as long as
// the test binary.
var tableModelEndpoint = sync.OnceValue(openaitest.New)

// tableRequest is one call of a row.
type tableRequest struct {
	method, path, body string
	headers            []string
	// cookie, when set, replaces the role's session cookie (a row that ends the session).
	cookie *http.Cookie
}

type tableRow struct {
	// policy is the x-platform-policy the operation must declare.
	policy string
	want   statuses
	// request builds the call for one role, just before it is made, so that it can prepare what
	// the call consumes (an object to delete, the current ETag).
	request func(f *tableFixture, r role) tableRequest
}

// tableFixture is the world of the table on one store.
type tableFixture struct {
	*identityEnv
	t       *testing.T
	cookies [roleCount]*http.Cookie
	names   [roleCount]string
	// spare principals that rows act upon.
	spareAccount, spareAdmin, spareMember, spareRemoved identity.Account
	// secretNames are the fixture Secrets of the workspace, the instance and the tenant.
	secretNames map[string]string
}

const tablePassword = "Table-Passw0rd!"

func newTableFixture(t *testing.T, db *store.Store) *tableFixture {
	t.Helper()
	f := &tableFixture{identityEnv: newIdentityEnv(t, db), t: t}
	elsewhere := f.workspace("elsewhere")
	for r, spec := range map[role]struct {
		ws   identity.Workspace
		role identity.Role
	}{owner: {f.ws, identity.RoleOwner}, admin: {f.ws, identity.RoleAdmin}, member: {f.ws, identity.RoleMember},
		viewer: {f.ws, identity.RoleViewer}, nonMember: {elsewhere, identity.RoleOwner}} {
		f.names[r] = fmt.Sprintf("table-%s", r)
		_, _, err := f.svc.CreateLocalAccountWithAccess(context.Background(), f.admin.ID,
			identity.NewLocalAccount{Username: f.names[r], Password: tablePassword}, identity.InitialAccess{Workspace: spec.ws.ID, Role: spec.role})
		if err != nil {
			t.Fatal(err)
		}
		f.cookies[r] = f.signIn(f.names[r], tablePassword)
	}
	f.names[platformAdmin] = adminUser
	f.cookies[platformAdmin] = f.adminCookie
	f.spareAccount = f.account("spare-account", f.ws, identity.RoleViewer)
	f.spareAdmin = f.account("spare-admin", elsewhere, identity.RoleViewer)
	f.spareMember = f.account("spare-member", elsewhere, identity.RoleViewer)
	f.spareRemoved = f.account("spare-removed", elsewhere, identity.RoleViewer)

	// The Management objects the rows read, replace and refer to.
	for _, c := range []struct{ path, body string }{
		{"/api/agents", agentBody("table-agent", "Table")},
		{"/api/flows", directFlowBody("table-flow", "table-agent", "Table")},
		{"/api/flows/table-flow/versions", `{"version":"1.0.0"}`},
		{"/api/modelproviders", providerBody("table-provider", "Table")},
		{"/api/modelprofiles", profileBody("table-profile", "table-provider", "small-1")},
		{"/api/entries", entryBody("table-entry", "Table", `{"agent":{"name":"table-agent"}}`)},
		{"/api/dashboards", dashboardBody("table-dashboard")},
		{"/api/toolproviders", tableToolProviderBody("table-tool-provider")},
		{"/api/tools", tableToolBody("table-tool")},
		{"/api/triggers", tableTriggerBody("table-trigger")},
	} {
		r := f.as(platformAdmin, http.MethodPost, c.path, c.body)
		if r.status != http.StatusCreated {
			t.Fatalf("fixture %s: %d %v", c.path, r.status, r.body)
		}
	}
	if r := f.as(platformAdmin, http.MethodPost, "/api/entries/table-entry/publish", ""); r.status != http.StatusOK {
		t.Fatalf("fixture publish: %d %v", r.status, r.body)
	}
	f.secretFixtures()
	return f
}

// as calls in the table's workspace (by header) as role.
func (f *tableFixture) as(r role, method, path, body string, headers ...string) response {
	f.t.Helper()
	return f.do(f.cookies[r], method, path, body, append([]string{httpapi.WorkspaceHeader, f.ws.RouteName}, headers...)...)
}

// etag reads the current ETag of a Management object, as the administrator.
func (f *tableFixture) etag(path string) string {
	f.t.Helper()
	r := f.as(platformAdmin, http.MethodGet, path, "")
	if r.status != http.StatusOK {
		f.t.Fatalf("read %s: %d %v", path, r.status, r.body)
	}
	return r.header.Get("ETag")
}

// fresh creates a Management object for a row to delete and returns the If-Match header.
func (f *tableFixture) fresh(collection, name, body string) []string {
	f.t.Helper()
	r := f.as(platformAdmin, http.MethodPost, collection, body)
	if r.status != http.StatusCreated {
		f.t.Fatalf("create %s/%s: %d %v", collection, name, r.status, r.body)
	}
	return []string{"If-Match", r.header.Get("ETag")}
}

func get(path string) func(*tableFixture, role) tableRequest {
	return func(*tableFixture, role) tableRequest { return tableRequest{method: http.MethodGet, path: path} }
}

// kindRows are the five rows of a Management kind's generic operations.
func kindRows(rows map[string]tableRow, id, collection, fixture string, body func(name string) string) {
	rows["list-"+id+"s"] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(200), get(collection)}
	rows["get-"+id] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(200), get(collection + "/" + fixture)}
	rows["create-"+id] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(201), func(_ *tableFixture, r role) tableRequest {
		return tableRequest{method: http.MethodPost, path: collection, body: body("created-by-" + r.String())}
	}}
	rows["replace-"+id] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(200), func(f *tableFixture, _ role) tableRequest {
		path := collection + "/" + fixture
		return tableRequest{method: http.MethodPut, path: path, body: body(fixture), headers: []string{"If-Match", f.etag(path)}}
	}}
	rows["delete-"+id] = tableRow{httpapi.PolicyResourcesDelete, ownersAndAdmins(204), func(f *tableFixture, r role) tableRequest {
		name := "deleted-by-" + r.String()
		return tableRequest{method: http.MethodDelete, path: collection + "/" + name, headers: f.fresh(collection, name, body(name))}
	}}
}

// routeRoleTable has a row for every protected operation of the service API, keyed by operation
// id. TestEveryProtectedOperationHasARowInTheRouteRoleTable keeps it complete.
func routeRoleTable() map[string]tableRow {
	rows := map[string]tableRow{}
	kindRows(rows, "agent", "/api/agents", "table-agent", func(n string) string { return agentBody(n, "Table") })
	kindRows(rows, "flow", "/api/flows", "table-flow", func(n string) string { return directFlowBody(n, "table-agent", "Table") })
	kindRows(rows, "model-provider", "/api/modelproviders", "table-provider", func(n string) string { return providerBody(n, "Table") })
	kindRows(rows, "model-profile", "/api/modelprofiles", "table-profile", func(n string) string { return profileBody(n, "table-provider", "small-1") })

	read := func(path string) tableRow {
		return tableRow{httpapi.PolicyResourcesRead, workspaceRoles(200), get(path)}
	}
	rows["get-agent-model"] = read("/api/agents/table-agent/model")
	rows["get-deployment"] = read("/api/deployments/table-agent")
	// The cleanup's system-Flow option: a permitted caller reaches the rule (a user Flow is no
	// system-managed one: 409), the others are refused before it.
	rows["delete-system-flow"] = tableRow{httpapi.PolicyResourcesDelete, ownersAndAdmins(409), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodDelete, path: "/api/system-flows/table-flow", headers: []string{"If-Match", f.etag("/api/flows/table-flow")}}
	}}
	rows["list-flow-versions"] = read("/api/flows/table-flow/versions")
	rows["get-flow-version"] = read("/api/flows/table-flow/versions/1.0.0")
	rows["get-model-provider-status"] = read("/api/modelproviders/table-provider/status")
	rows["list-model-provider-models"] = read("/api/modelproviders/table-provider/models")
	rows["list-model-provider-usages"] = read("/api/modelproviders/table-provider/usages")
	rows["list-models"] = read("/api/models")
	// Discovery and the connectivity test contact an endpoint: each role's call gets a provider of
	// its own at the table's OpenAI-compatible test server.
	for id, suffix := range map[string]string{"refresh-model-provider-models": "/models/refresh", "test-model-provider": "/test"} {
		rows[id] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(200), func(f *tableFixture, r role) tableRequest {
			name := id + "-" + r.String()
			f.fresh("/api/modelproviders", name, providerAt(name, tableModelEndpoint().BaseURL()))
			return tableRequest{method: http.MethodPost, path: "/api/modelproviders/" + name + suffix}
		}}
	}
	// Entries (default route family, and the namespaced one through the default resource
	// namespace) and Dashboards.
	rows["discover-entries"] = tableRow{httpapi.PolicyAuthenticated, anyInteractiveUser(200), get("/api/entries")}
	kindRows(rows, "dashboard", "/api/dashboards", "table-dashboard", dashboardBody)
	rows["get-dashboard-view"] = read("/api/dashboards/table-dashboard/view")
	for prefix, suffix := range map[string]string{"/api/entries/": "", "/api/namespaces/default/entries/": "-in-namespace"} {
		rows["get-published-entry"+suffix] = read(prefix + "table-entry/published")
		rows["get-entry-dependencies"+suffix] = read(prefix + "table-entry/dependencies")
		rows["publish-entry"+suffix] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(200), func(*tableFixture, role) tableRequest {
			return tableRequest{method: http.MethodPost, path: prefix + "table-entry/publish"}
		}}
		rows["delete-entry"+suffix] = tableRow{httpapi.PolicyResourcesDelete, ownersAndAdmins(204), func(f *tableFixture, r role) tableRequest {
			name := "deleted" + suffix + "-by-" + r.String()
			return tableRequest{method: http.MethodDelete, path: prefix + name,
				headers: f.fresh("/api/entries", name, entryBody(name, "Table", `{"agent":{"name":"table-agent"}}`))}
		}}
	}
	rows["get-entry-draft-in-namespace"] = read("/api/namespaces/default/entries/table-entry")
	rows["list-entry-drafts-in-namespace"] = read("/api/namespaces/default/entry-drafts")
	rows["list-entry-drafts"] = read("/api/entry-drafts")
	rows["get-entry-draft"] = read("/api/entries/table-entry")
	rows["create-entry-draft"] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(201), func(_ *tableFixture, r role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/entries", body: entryBody("created-by-"+r.String(), "Table", `{"agent":{"name":"table-agent"}}`)}
	}}
	rows["replace-entry-draft"] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(200), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodPut, path: "/api/entries/table-entry", body: entryBody("table-entry", "Table", `{"agent":{"name":"table-agent"}}`),
			headers: []string{"If-Match", f.etag("/api/entries/table-entry")}}
	}}
	rows["get-model-profile-resolution"] = read("/api/modelprofiles/table-profile/resolution")
	rows["list-model-profile-usages"] = read("/api/modelprofiles/table-profile/usages")
	rows["publish-flow-version"] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(201), func(_ *tableFixture, r role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/flows/table-flow/versions", body: fmt.Sprintf(`{"version":"2.0.%d"}`, r)}
	}}

	// Authentication.
	rows["logout"] = tableRow{httpapi.PolicyInteractiveUser, anyInteractiveUser(204), func(f *tableFixture, r role) tableRequest {
		req := tableRequest{method: http.MethodPost, path: "/api/auth/logout"}
		if r != anonymous {
			// A session of its own, so that the role's main session stays signed in.
			password := tablePassword
			if r == platformAdmin {
				password = adminPassword
			}
			req.cookie = f.signIn(f.names[r], password)
		}
		return req
	}}

	// Local accounts, Platform administrators, audit.
	rows["list-local-accounts"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(200), get("/api/identity/accounts/")}
	rows["create-local-account"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(201), func(f *tableFixture, r role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/identity/accounts/", body: fmt.Sprintf(
			`{"username":"made-by-%s","password":%q,"workspace":%q,"role":"Viewer"}`, r, tablePassword, f.ws.ID)}
	}}
	rows["set-local-account-status"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(200), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodPut, path: "/api/identity/accounts/" + f.spareAccount.AccountID + "/status", body: `{"status":"Active"}`}
	}}
	rows["list-platform-administrators"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(200), get("/api/identity/platform-administrators")}
	rows["grant-platform-administrator"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(200), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodPut, path: "/api/identity/platform-administrators/" + f.spareAdmin.PrincipalID}
	}}
	rows["revoke-platform-administrator"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(204), func(f *tableFixture, _ role) tableRequest {
		if _, _, err := f.svc.GrantPlatformAdministrator(context.Background(), f.admin.ID, f.spareAdmin.PrincipalID); err != nil {
			f.t.Fatal(err)
		}
		return tableRequest{method: http.MethodDelete, path: "/api/identity/platform-administrators/" + f.spareAdmin.PrincipalID}
	}}
	externalIdentities := func(f *tableFixture) string {
		return "/api/identity/principals/" + f.spareAccount.PrincipalID + "/external-identities"
	}
	rows["list-external-identities"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(200), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodGet, path: externalIdentities(f)}
	}}
	rows["link-external-identity"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(201), func(f *tableFixture, r role) tableRequest {
		return tableRequest{method: http.MethodPost, path: externalIdentities(f),
			body: fmt.Sprintf(`{"issuer":"https://idp.example.test","subject":"linked-by-%s"}`, r)}
	}}
	rows["unlink-external-identity"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(204), func(f *tableFixture, r role) tableRequest {
		link, _, err := f.svc.LinkExternalIdentity(context.Background(), f.admin.ID, f.spareAccount.PrincipalID, "https://idp.example.test", "unlinked-by-"+r.String())
		if err != nil {
			f.t.Fatal(err)
		}
		return tableRequest{method: http.MethodDelete, path: externalIdentities(f) + "/" + link.ID}
	}}
	rows["list-audit-events"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(200), get("/api/identity/audit-events?limit=10")}

	// Request context and preferences.
	rows["get-identity-context"] = tableRow{httpapi.PolicyWorkspaceReader, workspaceRoles(200), get("/api/identity/context")}
	rows["select-workspace"] = tableRow{httpapi.PolicyInteractiveUser, statuses{401, 200, 200, 200, 200, 404, 200}, func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/identity/context/workspace", body: fmt.Sprintf(`{"workspace":%q}`, f.ws.RouteName)}
	}}
	rows["get-preferences"] = tableRow{httpapi.PolicyInteractiveUser, anyInteractiveUser(200), get("/api/identity/preferences")}
	rows["replace-preferences"] = tableRow{httpapi.PolicyInteractiveUser, anyInteractiveUser(200), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodPut, path: "/api/identity/preferences", body: `{"theme":"Dark"}`}
	}}

	// Organization.
	rows["get-organization"] = tableRow{httpapi.PolicyAuthorizationReader, ownersAndAdmins(200), get("/api/identity/organization")}
	rows["list-workspaces"] = tableRow{httpapi.PolicyAuthorizationReader, ownersAndAdmins(200), get("/api/identity/workspaces")}
	rows["list-members"] = tableRow{httpapi.PolicyAuthorizationReader, ownersAndAdmins(200), get("/api/identity/members")}
	rows["get-workspace"] = tableRow{httpapi.PolicyWorkspaceReader, workspaceRoles(200), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodGet, path: "/api/identity/workspaces/" + f.ws.ID}
	}}
	rows["create-workspace"] = tableRow{httpapi.PolicyWorkspaceAdmin, ownersAndAdmins(201), func(_ *tableFixture, r role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/identity/workspaces", body: fmt.Sprintf(`{"name":%q}`, uniqueWorkspace("by-"+r.String()))}
	}}
	rows["list-workspace-memberships"] = tableRow{httpapi.PolicyAuthorizationReader, ownersAndAdmins(200), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodGet, path: "/api/identity/workspaces/" + f.ws.RouteName + "/memberships"}
	}}
	rows["set-workspace-membership"] = tableRow{httpapi.PolicyAuthorizationAdmin, ownersAndAdmins(200), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodPut, path: "/api/identity/workspaces/" + f.ws.ID + "/memberships/" + f.spareMember.PrincipalID, body: `{"role":"Viewer"}`}
	}}
	rows["remove-workspace-membership"] = tableRow{httpapi.PolicyAuthorizationAdmin, ownersAndAdmins(204), func(f *tableFixture, _ role) tableRequest {
		if _, err := f.svc.SetWorkspaceMembership(context.Background(), f.admin.ID, f.ws.ID, f.spareRemoved.PrincipalID, identity.RoleViewer); err != nil {
			f.t.Fatal(err)
		}
		return tableRequest{method: http.MethodDelete, path: "/api/identity/workspaces/" + f.ws.ID + "/memberships/" + f.spareRemoved.PrincipalID}
	}}

	// Personal access tokens: managed with a session only (a token gets 403, see pat_test.go).
	const patBody = `{"name":"table","permissions":["resources/read"],"expiresInDays":1}`
	rows["list-personal-access-tokens"] = tableRow{httpapi.PolicyInteractiveUser, anyInteractiveUser(200), get("/api/identity/pat")}
	// The token is for the workspace the header selects, which is not the non-member's.
	rows["create-personal-access-token"] = tableRow{httpapi.PolicyInteractiveUser, statuses{401, 201, 201, 201, 201, 404, 201}, func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/identity/pat", body: patBody}
	}}
	rows["revoke-personal-access-token"] = tableRow{httpapi.PolicyInteractiveUser, anyInteractiveUser(204), func(f *tableFixture, r role) tableRequest {
		id := "no-such-token"
		if r != anonymous {
			// A token of the role's own, in its default workspace (no header).
			resp := f.do(f.cookies[r], http.MethodPost, "/api/identity/pat", patBody)
			if resp.status != http.StatusCreated {
				f.t.Fatalf("create a token as %s: %d %v", r, resp.status, resp.body)
			}
			id = resp.body["id"].(string)
		}
		return tableRequest{method: http.MethodDelete, path: "/api/identity/pat/" + id}
	}}
	rows["revoke-all-personal-access-tokens"] = tableRow{httpapi.PolicyInteractiveUser, anyInteractiveUser(204), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodDelete, path: "/api/identity/pat"}
	}}
	sparePATs := func(f *tableFixture) string { return "/api/identity/principals/" + f.spareAccount.PrincipalID + "/pat" }
	rows["list-principal-personal-access-tokens"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(200), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodGet, path: sparePATs(f)}
	}}
	rows["revoke-principal-personal-access-token"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(204), func(f *tableFixture, _ role) tableRequest {
		pat, _, err := f.svc.CreatePAT(context.Background(), f.spareAccount.PrincipalID, identity.NewPAT{PrincipalID: f.spareAccount.PrincipalID,
			WorkspaceID: f.ws.ID, Name: "table", Permissions: identity.PATAllowed, ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			f.t.Fatal(err)
		}
		return tableRequest{method: http.MethodDelete, path: sparePATs(f) + "/" + pat.ID}
	}}
	rows["revoke-all-principal-personal-access-tokens"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(204), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodDelete, path: sparePATs(f)}
	}}

	rows["get-workspace-limits"] = tableRow{httpapi.PolicyWorkspaceReader, workspaceRoles(200), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodGet, path: "/api/workspaces/" + f.ws.ID + "/limits"}
	}}

	workRows(rows)
	toolRows(rows)
	workplaceRows(rows)
	secretRows(rows)
	triggerRows(rows)
	packProjectRows(rows)
	packRows(rows)
	sourceRegistryRows(rows)
	usageRows(rows)
	return rows
}

// protectedOperation is an operation of the OpenAPI document that declares a policy.
type protectedOperation struct{ method, path, policy string }

// protectedOperations are the operations that declare x-platform-policy, by operation id.
func protectedOperations(api huma.API) map[string]protectedOperation {
	ops := map[string]protectedOperation{}
	for path, item := range api.OpenAPI().Paths {
		for method, op := range map[string]*huma.Operation{
			http.MethodGet: item.Get, http.MethodPost: item.Post, http.MethodPut: item.Put, http.MethodPatch: item.Patch,
			http.MethodDelete: item.Delete, http.MethodHead: item.Head, http.MethodOptions: item.Options, http.MethodTrace: item.Trace,
		} {
			if op == nil {
				continue
			}
			if policy, ok := op.Extensions["x-platform-policy"].(string); ok {
				ops[op.OperationID] = protectedOperation{method: method, path: path, policy: policy}
			}
		}
	}
	return ops
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// A new protected route without a row fails here, naming the operation: the table must say what
// every role gets from it.
func TestEveryProtectedOperationHasARowInTheRouteRoleTable(t *testing.T) {
	api, err := service.New(httpapi.Options{
		Config: config.FromMap(config.Production, nil), Kube: kube, Ready: func(context.Context) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	ops := protectedOperations(api.API())
	if len(ops) == 0 {
		t.Fatal("the OpenAPI document declares no x-platform-policy: the walk is broken")
	}
	rows := routeRoleTable()
	for _, id := range sortedKeys(ops) {
		op := ops[id]
		row, ok := rows[id]
		switch {
		case !ok:
			t.Errorf("operation %s (%s %s, policy %s) has no row in routeRoleTable: add one with the status each role gets", id, op.method, op.path, op.policy)
		case row.policy != op.policy:
			t.Errorf("operation %s (%s %s) declares policy %s, its row in routeRoleTable says %s", id, op.method, op.path, op.policy, row.policy)
		}
	}
	for _, id := range sortedKeys(rows) {
		if _, ok := ops[id]; !ok {
			t.Errorf("routeRoleTable has a row for %s, which is no operation declaring x-platform-policy", id)
		}
	}
}

// Every protected route, as every kind of caller, on both dialects: anonymous, the four roles of
// the workspace, an Owner of another workspace, and a Platform administrator without membership.
func TestEveryProtectedRouteAnswersEachRoleAsTheRouteRoleTableSays(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		f := newTableFixture(t, db)
		rows := routeRoleTable()
		for _, id := range sortedKeys(rows) {
			row := rows[id]
			t.Run(id, func(t *testing.T) {
				defer f.use(t)()
				for r := anonymous; r < roleCount; r++ {
					req := row.request(f, r)
					cookie := f.cookies[r]
					if req.cookie != nil {
						cookie = req.cookie
					}
					headers := append([]string{httpapi.WorkspaceHeader, f.ws.RouteName}, req.headers...)
					resp := f.do(cookie, req.method, req.path, req.body, headers...)
					if resp.status != row.want[r] {
						t.Errorf("%s %s as %s: %d, want %d; body %v", req.method, req.path, r, resp.status, row.want[r], resp.body)
					}
					if resp.status >= 400 && resp.header.Get("Content-Type") != "application/problem+json" {
						t.Errorf("%s %s as %s: %d without Problem Details", req.method, req.path, r, resp.status)
					}
				}
			})
		}
	})
}

// use makes t the test that the fixture's helpers report to, until the returned func restores
// the previous one (a subtest must not fail its parent).
func (f *tableFixture) use(t *testing.T) func() {
	prev := f.t
	f.t, f.identityEnv.t = t, t
	return func() { f.t, f.identityEnv.t = prev, prev }
}
