package service_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	identityapi "platform.dev/platform/apiserver/httpapi/identity"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

// patWorld is a Local-mode server after bootstrap: the administrator (no membership), and a
// second user who is a Member of ws and an Admin of other, both workspaces of one tenant.
type patWorld struct {
	server *httptest.Server
	svc    *identity.Service
	db     *store.Store

	admin, member         *http.Cookie
	adminID, memberID     string
	memberAccountID       string
	ws, other             string // route names
	wsID, otherID, tenant string
}

const memberPassword = "Difference-Engine-1822!"

func newPATWorld(t *testing.T, opts store.Options) patWorld {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	handler, svc, db := localHandlerOn(t, opts, nil)
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)
	w := patWorld{server: server, svc: svc, db: db, ws: uniqueWorkspace("pat"), other: uniqueWorkspace("pat-other")}

	r := call(t, server, http.MethodPost, "/api/auth/bootstrap", bootstrapBody(w.ws, adminPassword))
	g.Expect(r.status).To(Equal(http.StatusCreated), "body: %v", r.body)
	w.admin, w.adminID = sessionFrom(g, r), r.body["principalId"].(string)
	g.Expect(db.DB().QueryRow(`SELECT id, tenant_id FROM workspaces`).Scan(&w.wsID, &w.tenant)).To(Succeed())

	other, err := svc.CreateWorkspace(ctx, w.tenant, w.other, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(httpapi.NamespaceProvisioner(kube)(ctx, other)).To(Succeed())
	w.otherID = other.ID

	acct, member, err := svc.CreateLocalAccount(ctx, w.adminID, identity.NewLocalAccount{Username: "Charles", Password: memberPassword})
	g.Expect(err).NotTo(HaveOccurred())
	w.memberID, w.memberAccountID = member.ID, acct.AccountID
	w.setRole(t, w.memberID, w.wsID, identity.RoleMember)
	w.setRole(t, w.memberID, w.otherID, identity.RoleAdmin)
	r = call(t, server, http.MethodPost, "/api/auth/local/login", fmt.Sprintf(`{"username":"Charles","password":%q}`, memberPassword))
	g.Expect(r.status).To(Equal(http.StatusOK), "body: %v", r.body)
	w.member = sessionFrom(g, r)
	return w
}

// setRole gives the Principal the role in the workspace; the next request sees it.
func (w patWorld) setRole(t *testing.T, principalID, workspaceID string, role identity.Role) {
	t.Helper()
	w.exec(t, `DELETE FROM memberships WHERE principal_id = ? AND scope_kind = 'workspace' AND scope_id = ?`, principalID, workspaceID)
	w.exec(t, `INSERT INTO memberships (principal_id, scope_kind, scope_id, role, created_at) VALUES (?, 'workspace', ?, ?, ?)`,
		principalID, workspaceID, string(role), time.Now().UTC())
}

// exec runs a statement with ? placeholders on either dialect.
func (w patWorld) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if _, err := w.db.DB().Exec(w.db.Rebind(query), args...); err != nil {
		t.Fatal(err)
	}
}

func (w patWorld) queryRow(query string, args ...any) *sql.Row {
	return w.db.DB().QueryRow(w.db.Rebind(query), args...)
}

func (w patWorld) call(t *testing.T, method, path, body string, headers ...string) response {
	t.Helper()
	return call(t, w.server, method, path, body, headers...)
}

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// patRequest is the body of a token creation.
func patRequest(workspace string, permissions []string, extra map[string]any) string {
	body := map[string]any{"name": "deploy-bot", "permissions": permissions, "expiresInDays": 30}
	if workspace != "" {
		body["workspace"] = workspace
	}
	for k, v := range extra {
		if v == nil {
			delete(body, k)
		} else {
			body[k] = v
		}
	}
	data, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// createPAT creates a token with the session cookie and returns its id and the token.
func (w patWorld) createPAT(t *testing.T, session *http.Cookie, workspace string, permissions ...string) (id, token string) {
	t.Helper()
	r := w.call(t, http.MethodPost, "/api/identity/pat", patRequest(workspace, permissions, nil), withCookie(session)...)
	if r.status != http.StatusCreated {
		t.Fatalf("create PAT: %d %v", r.status, r.body)
	}
	return r.body["id"].(string), r.body["token"].(string)
}

func TestAPATIsShownOnceListedWithoutItsSecretAndAuthenticatesAPIRequests(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		w := newPATWorld(t, opts)

		r := w.call(t, http.MethodPost, "/api/identity/pat", patRequest(w.ws, []string{"resources/read", "runs/read"}, nil), withCookie(w.member)...)
		g.Expect(r.status).To(Equal(http.StatusCreated), "body: %v", r.body)
		g.Expect(r.header.Get("Cache-Control")).To(Equal("no-store"))
		token, _ := r.body["token"].(string)
		g.Expect(token).To(MatchRegexp(`^platform_pat_[A-Za-z0-9_-]{43}$`))
		g.Expect(r.body).To(HaveKeyWithValue("prefix", token[:len("platform_pat_")+8]))
		g.Expect(r.body).To(HaveKeyWithValue("workspace", w.ws))
		g.Expect(r.body).To(HaveKeyWithValue("workspaceId", w.wsID))
		g.Expect(r.body).To(HaveKeyWithValue("principalId", w.memberID))
		g.Expect(r.body).To(HaveKeyWithValue("permissions", ConsistOf("resources/read", "runs/read")))
		g.Expect(r.body).To(HaveKeyWithValue("status", "Active"))
		g.Expect(r.body).NotTo(HaveKey("lastUsedAt"))
		expiresAt, err := time.Parse(time.RFC3339, r.body["expiresAt"].(string))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(expiresAt).To(BeTemporally("~", time.Now().Add(30*24*time.Hour), time.Minute))
		id := r.body["id"].(string)
		secretPart := token[len(r.body["prefix"].(string)):]

		g.Expect(w.call(t, http.MethodGet, "/api/agents", "", bearer(token)...).status).To(Equal(http.StatusOK), "the token authenticates")

		list := w.call(t, http.MethodGet, "/api/identity/pat", "", withCookie(w.member)...)
		g.Expect(list.status).To(Equal(http.StatusOK), "body: %v", list.body)
		g.Expect(list.body["items"]).To(ConsistOf(And(
			HaveKeyWithValue("id", id), Not(HaveKey("token")), HaveKey("lastUsedAt"), HaveKeyWithValue("status", "Active"))))
		raw, _ := json.Marshal(list.body)
		g.Expect(string(raw)).NotTo(ContainSubstring(secretPart), "a listing never shows the token again")
		adminList := w.call(t, http.MethodGet, "/api/identity/principals/"+w.memberID+"/pat", "", withCookie(w.admin)...)
		raw, _ = json.Marshal(adminList.body)
		g.Expect(string(raw)).To(ContainSubstring(id))
		g.Expect(string(raw)).NotTo(ContainSubstring(secretPart))

		var digest, prefix string
		g.Expect(w.queryRow(`SELECT digest, prefix FROM personal_access_tokens WHERE id = ?`, id).Scan(&digest, &prefix)).To(Succeed())
		sum := sha256.Sum256([]byte(token))
		g.Expect(digest).To(Equal(hex.EncodeToString(sum[:])), "only the digest and the prefix are stored")
		g.Expect(prefix).To(Equal(token[:len(prefix)]))
		var matches int
		g.Expect(w.queryRow(`SELECT COUNT(*) FROM personal_access_tokens WHERE id LIKE ? OR name LIKE ? OR permissions LIKE ? OR prefix LIKE ?`,
			"%"+secretPart+"%", "%"+secretPart+"%", "%"+secretPart+"%", "%"+secretPart+"%").Scan(&matches)).To(Succeed())
		g.Expect(matches).To(BeZero())

		// Without a workspace in the body, the token is for the workspace the request selects.
		r = w.call(t, http.MethodPost, "/api/identity/pat", patRequest("", []string{"resources/read"}, nil),
			append(withCookie(w.member), httpapi.WorkspaceHeader, w.other)...)
		g.Expect(r.status).To(Equal(http.StatusCreated), "body: %v", r.body)
		g.Expect(r.body).To(HaveKeyWithValue("workspace", w.other))
		r = w.call(t, http.MethodPost, "/api/identity/pat", patRequest("", []string{"resources/read"}, map[string]any{"expiresInDays": nil,
			"expiresAt": time.Now().Add(time.Hour).Format(time.RFC3339)}), withCookie(w.member)...)
		g.Expect(r.status).To(Equal(http.StatusCreated), "body: %v", r.body)
		g.Expect(r.body).To(HaveKeyWithValue("workspace", w.ws), "else the caller's first workspace")
	})
}

func TestPATCreationRefusesInvalidInputWithFieldLocations(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		w := newPATWorld(t, opts)
		read := []string{"resources/read"}
		cases := map[string]invalidBody{
			"an expiry is mandatory": {
				patRequest(w.ws, read, map[string]any{"expiresInDays": nil}), "body.expiresAt"},
			"expiresAt and expiresInDays exclude each other": {
				patRequest(w.ws, read, map[string]any{"expiresAt": time.Now().Add(time.Hour).Format(time.RFC3339)}), "body.expiresInDays"},
			"at most 365 days (expiresInDays)": {
				patRequest(w.ws, read, map[string]any{"expiresInDays": 366}), "body.expiresInDays"},
			"at most 365 days (expiresAt)": {
				patRequest(w.ws, read, map[string]any{"expiresInDays": nil, "expiresAt": time.Now().Add(366 * 24 * time.Hour).Format(time.RFC3339)}), "body.expiresAt"},
			"the expiry is in the future": {
				patRequest(w.ws, read, map[string]any{"expiresInDays": nil, "expiresAt": time.Now().Add(-time.Minute).Format(time.RFC3339)}), "body.expiresAt"},
			"expiresAt is RFC 3339": {
				patRequest(w.ws, read, map[string]any{"expiresInDays": nil, "expiresAt": "next tuesday"}), "body.expiresAt"},
			"the allow-list excludes administration permissions": {
				patRequest(w.ws, []string{"resources/read", "authorization/write"}, nil), "body.permissions[1]"},
			"the allow-list names catalog permissions": {
				patRequest(w.ws, []string{"everything"}, nil), "body.permissions[0]"},
			"the allow-list is not empty": {
				patRequest(w.ws, []string{}, nil), "body.permissions"},
			"a name is required": {
				patRequest(w.ws, read, map[string]any{"name": ""}), "body.name"},
			"a name has no surrounding spaces": {
				patRequest(w.ws, read, map[string]any{"name": " deploy"}), "body.name"},
			"the workspace is one the caller can access": {
				patRequest("no-such-workspace", read, nil), "body.workspace"},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				r := w.call(t, http.MethodPost, "/api/identity/pat", tc.body, withCookie(w.member)...)
				expectProblem(g, r, http.StatusUnprocessableEntity)
				g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", tc.location)), "body: %v", r.body)
				g.Expect(r.body).NotTo(HaveKey("token"))
			})
		}
		g := NewWithT(t)
		// A workspace of the tenant the member does not belong to is refused like a missing one.
		third, err := w.svc.CreateWorkspace(context.Background(), w.tenant, uniqueWorkspace("pat-third"), "")
		g.Expect(err).NotTo(HaveOccurred())
		r := w.call(t, http.MethodPost, "/api/identity/pat", patRequest(third.RouteName, read, nil), withCookie(w.member)...)
		expectProblem(g, r, http.StatusUnprocessableEntity)
		g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", "body.workspace")))
		// A header naming a workspace that is not the caller's is 404, as on every route.
		expectProblem(g, w.call(t, http.MethodPost, "/api/identity/pat", patRequest("", read, nil),
			append(withCookie(w.member), httpapi.WorkspaceHeader, third.RouteName)...), http.StatusNotFound)

		list := w.call(t, http.MethodGet, "/api/identity/pat", "", withCookie(w.member)...)
		g.Expect(list.body["items"]).To(BeEmpty(), "nothing was created")
	})
}

func TestAPATsRightsAreTheLiveRoleIntersectedWithItsAllowList(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		w := newPATWorld(t, opts)
		_, token := w.createPAT(t, w.member, w.ws, "resources/read", "resources/write")

		g.Expect(w.call(t, http.MethodGet, "/api/agents", "", bearer(token)...).status).To(Equal(http.StatusOK))
		r := w.call(t, http.MethodPost, "/api/agents", agentBody("by-member", "M"), bearer(token)...)
		expectProblem(g, r, http.StatusForbidden)
		g.Expect(r.body["detail"]).To(ContainSubstring("resources/write"), "a Member's token with resources/write still cannot write")

		w.setRole(t, w.memberID, w.wsID, identity.RoleAdmin)
		r = w.call(t, http.MethodPost, "/api/agents", agentBody("by-admin", "A"), bearer(token)...)
		g.Expect(r.status).To(Equal(http.StatusCreated), "promoted: the next request may write; body: %v", r.body)
		etag := r.header.Get("ETag")
		expectProblem(g, w.call(t, http.MethodDelete, "/api/agents/by-admin", "", append(bearer(token), "If-Match", etag)...), http.StatusForbidden)
		g.Expect(w.call(t, http.MethodDelete, "/api/agents/by-admin", "", append(withCookie(w.member), "If-Match", etag)...).status).
			To(Equal(http.StatusNoContent), "the session of the same Admin may delete: only the token's allow-list lacks resources/delete")

		w.setRole(t, w.memberID, w.wsID, identity.RoleViewer)
		expectProblem(g, w.call(t, http.MethodPost, "/api/agents", agentBody("by-viewer", "V"), bearer(token)...), http.StatusForbidden)
		g.Expect(w.call(t, http.MethodGet, "/api/agents", "", bearer(token)...).status).To(Equal(http.StatusOK))

		_, runsOnly := w.createPAT(t, w.member, w.ws, "runs/read")
		expectProblem(g, w.call(t, http.MethodGet, "/api/agents", "", bearer(runsOnly)...), http.StatusForbidden)
	})
}

func TestAPATReachesOnlyItsWorkspace(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		w := newPATWorld(t, opts)
		_, token := w.createPAT(t, w.member, w.ws, "resources/read", "resources/write")

		g.Expect(w.call(t, http.MethodGet, "/api/agents", "", append(bearer(token), httpapi.WorkspaceHeader, w.ws)...).status).To(Equal(http.StatusOK))
		for _, other := range []string{w.other, w.otherID} {
			r := w.call(t, http.MethodGet, "/api/agents", "", append(bearer(token), httpapi.WorkspaceHeader, other)...)
			expectProblem(g, r, http.StatusNotFound)
		}
		g.Expect(w.call(t, http.MethodGet, "/api/agents", "", append(withCookie(w.member), httpapi.WorkspaceHeader, w.other)...).status).
			To(Equal(http.StatusOK), "the member's session reaches the other workspace")
		// The selection cookie names the other workspace, where the member is Admin; the token still
		// acts in its own, where the member may not write.
		expectProblem(g, w.call(t, http.MethodPost, "/api/agents", agentBody("elsewhere", "E"),
			append(bearer(token), "Cookie", httpapi.WorkspaceCookie+"="+w.other)...), http.StatusForbidden)
	})
}

func TestARevokedOrExpiredPATFailsOnTheNextRequest(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		w := newPATWorld(t, opts)
		revokedID, revoked := w.createPAT(t, w.member, w.ws, "resources/read")
		expiredID, expired := w.createPAT(t, w.member, w.ws, "resources/read")
		_, kept := w.createPAT(t, w.member, w.ws, "resources/read")
		for _, token := range []string{revoked, expired, kept} {
			g.Expect(w.call(t, http.MethodGet, "/api/agents", "", bearer(token)...).status).To(Equal(http.StatusOK))
		}

		g.Expect(w.call(t, http.MethodDelete, "/api/identity/pat/"+revokedID, "", withCookie(w.member)...).status).To(Equal(http.StatusNoContent))
		expectProblem(g, w.call(t, http.MethodGet, "/api/agents", "", bearer(revoked)...), http.StatusUnauthorized)
		g.Expect(w.call(t, http.MethodDelete, "/api/identity/pat/"+revokedID, "", withCookie(w.member)...).status).To(Equal(http.StatusNoContent), "revoking again is no error")
		expectProblem(g, w.call(t, http.MethodDelete, "/api/identity/pat/no-such-token", "", withCookie(w.member)...), http.StatusNotFound)

		w.exec(t, `UPDATE personal_access_tokens SET expires_at = ? WHERE id = ?`, time.Now().UTC().Add(-time.Second), expiredID)
		expectProblem(g, w.call(t, http.MethodGet, "/api/agents", "", bearer(expired)...), http.StatusUnauthorized)
		g.Expect(w.call(t, http.MethodGet, "/api/agents", "", bearer(kept)...).status).To(Equal(http.StatusOK))

		list := w.call(t, http.MethodGet, "/api/identity/pat", "", withCookie(w.member)...)
		g.Expect(list.body["items"]).To(ContainElements(
			And(HaveKeyWithValue("id", revokedID), HaveKeyWithValue("status", "Revoked"), HaveKey("revokedAt")),
			And(HaveKeyWithValue("id", expiredID), HaveKeyWithValue("status", "Expired")),
		))

		g.Expect(w.call(t, http.MethodDelete, "/api/identity/pat", "", withCookie(w.member)...).status).To(Equal(http.StatusNoContent))
		expectProblem(g, w.call(t, http.MethodGet, "/api/agents", "", bearer(kept)...), http.StatusUnauthorized)
	})
}

func TestAPATFailsAtOnceWhenItsPrincipalOrWorkspaceIsDisabled(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		w := newPATWorld(t, opts)
		_, inWS := w.createPAT(t, w.member, w.ws, "resources/read")
		_, inOther := w.createPAT(t, w.member, w.other, "resources/read")

		w.exec(t, `UPDATE workspaces SET status = 'Disabled' WHERE id = ?`, w.otherID)
		expectProblem(g, w.call(t, http.MethodGet, "/api/agents", "", bearer(inOther)...), http.StatusUnauthorized)
		g.Expect(w.call(t, http.MethodGet, "/api/agents", "", bearer(inWS)...).status).To(Equal(http.StatusOK))

		g.Expect(w.svc.Disable(context.Background(), w.adminID, w.memberAccountID)).To(Succeed())
		expectProblem(g, w.call(t, http.MethodGet, "/api/agents", "", bearer(inWS)...), http.StatusUnauthorized)
	})
}

func TestAPATCannotManagePATsOrDoPlatformAdministration(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		w := newPATWorld(t, opts)
		_, memberToken := w.createPAT(t, w.member, w.ws, "workspaces/read", "resources/read")
		adminTokenID, adminToken := w.createPAT(t, w.admin, w.ws, "workspaces/read", "resources/read")
		for _, token := range []string{memberToken, adminToken} {
			for _, route := range []struct{ method, path, body string }{
				{http.MethodGet, "/api/identity/pat", ""},
				{http.MethodPost, "/api/identity/pat", patRequest(w.ws, []string{"resources/read"}, nil)},
				{http.MethodDelete, "/api/identity/pat/" + adminTokenID, ""},
				{http.MethodDelete, "/api/identity/pat", ""},
				{http.MethodGet, "/api/identity/principals/" + w.memberID + "/pat", ""},
				{http.MethodDelete, "/api/identity/principals/" + w.memberID + "/pat/" + adminTokenID, ""},
				{http.MethodDelete, "/api/identity/principals/" + w.memberID + "/pat", ""},
				{http.MethodPost, "/api/auth/logout", ""},
			} {
				t.Run(route.method+" "+route.path, func(t *testing.T) {
					g := NewWithT(t)
					r := w.call(t, route.method, route.path, route.body, bearer(token)...)
					expectProblem(g, r, http.StatusForbidden)
				})
			}
		}
		g := NewWithT(t)
		g.Expect(w.call(t, http.MethodGet, "/api/agents", "", bearer(adminToken)...).status).To(Equal(http.StatusOK), "both tokens still work")
		list := w.call(t, http.MethodGet, "/api/identity/pat", "", withCookie(w.admin)...)
		g.Expect(list.body["items"]).To(HaveLen(1), "no token was created or revoked with a token")
		g.Expect(list.body["items"]).To(ConsistOf(HaveKeyWithValue("status", "Active")))
	})
}

func TestAPlatformAdministratorMayUseAWorkspacePATWithoutMembership(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		w := newPATWorld(t, opts)
		var memberships int
		g.Expect(w.queryRow(`SELECT COUNT(*) FROM memberships WHERE principal_id = ?`, w.adminID).Scan(&memberships)).To(Succeed())
		g.Expect(memberships).To(BeZero())

		_, token := w.createPAT(t, w.admin, w.other, "resources/read", "resources/write")
		r := w.call(t, http.MethodPost, "/api/agents", agentBody("by-platform-admin", "P"), bearer(token)...)
		g.Expect(r.status).To(Equal(http.StatusCreated), "body: %v", r.body)
		g.Expect(w.call(t, http.MethodGet, "/api/agents/by-platform-admin", "", append(withCookie(w.member), httpapi.WorkspaceHeader, w.other)...).status).
			To(Equal(http.StatusOK), "created in the token's workspace")
		expectProblem(g, w.call(t, http.MethodGet, "/api/agents", "", append(bearer(token), httpapi.WorkspaceHeader, w.ws)...), http.StatusNotFound)
		expectProblem(g, w.call(t, http.MethodDelete, "/api/agents/by-platform-admin", "", append(bearer(token), "If-Match", r.header.Get("ETag"))...),
			http.StatusForbidden)
	})
}

func TestPlatformAdministratorsListAndRevokeAnotherPrincipalsPATs(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		w := newPATWorld(t, opts)
		oneID, one := w.createPAT(t, w.member, w.ws, "resources/read")
		_, two := w.createPAT(t, w.member, w.other, "resources/read")
		adminTokenID, _ := w.createPAT(t, w.admin, w.ws, "resources/read")
		others := "/api/identity/principals/" + w.memberID + "/pat"

		expectProblem(g, w.call(t, http.MethodGet, others, "", withCookie(w.member)...), http.StatusForbidden)
		expectProblem(g, w.call(t, http.MethodGet, "/api/identity/principals/"+w.adminID+"/pat", "", withCookie(w.member)...), http.StatusForbidden)
		expectProblem(g, w.call(t, http.MethodDelete, "/api/identity/principals/"+w.adminID+"/pat/"+adminTokenID, "", withCookie(w.member)...), http.StatusForbidden)
		expectProblem(g, w.call(t, http.MethodDelete, "/api/identity/pat/"+adminTokenID, "", withCookie(w.member)...), http.StatusNotFound)
		expectProblem(g, w.call(t, http.MethodGet, others, ""), http.StatusUnauthorized)

		list := w.call(t, http.MethodGet, others, "", withCookie(w.admin)...)
		g.Expect(list.status).To(Equal(http.StatusOK), "body: %v", list.body)
		g.Expect(list.body["items"]).To(HaveLen(2))
		expectProblem(g, w.call(t, http.MethodGet, "/api/identity/principals/nobody/pat", "", withCookie(w.admin)...), http.StatusNotFound)
		// The token is the administrator's, not the member's.
		expectProblem(g, w.call(t, http.MethodDelete, others+"/"+adminTokenID, "", withCookie(w.admin)...), http.StatusNotFound)

		g.Expect(w.call(t, http.MethodDelete, others+"/"+oneID, "", withCookie(w.admin)...).status).To(Equal(http.StatusNoContent))
		expectProblem(g, w.call(t, http.MethodGet, "/api/agents", "", bearer(one)...), http.StatusUnauthorized)
		g.Expect(w.call(t, http.MethodGet, "/api/agents", "", bearer(two)...).status).To(Equal(http.StatusOK))
		g.Expect(w.call(t, http.MethodDelete, others, "", withCookie(w.admin)...).status).To(Equal(http.StatusNoContent))
		expectProblem(g, w.call(t, http.MethodGet, "/api/agents", "", bearer(two)...), http.StatusUnauthorized)
		expectProblem(g, w.call(t, http.MethodDelete, "/api/identity/principals/nobody/pat", "", withCookie(w.admin)...), http.StatusNotFound)

		events, err := w.svc.Audit.Latest(context.Background(), 0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(events).To(ContainElement(And(
			HaveField("Action", identity.ActionPersonalAccessTokenRevoked), HaveField("ActorID", w.adminID), HaveField("TargetID", w.memberID))))
		g.Expect(events).To(ContainElement(And(
			HaveField("Action", identity.ActionPersonalAccessTokenRevokedAll), HaveField("ActorID", w.adminID), HaveField("TargetID", w.memberID))))
	})
}

func TestMalformedUnknownOrForeignBearerTokensLeaveTheRequestUnauthenticated(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		w := newPATWorld(t, opts)
		_, token := w.createPAT(t, w.member, w.ws, "resources/read")
		cases := map[string]string{
			"the prefix alone":         "Bearer platform_pat_",
			"too short":                "Bearer platform_pat_abc",
			"not base64url":            "Bearer platform_pat_" + strings.Repeat("*", 43),
			"non-ASCII":                "Bearer platform_pat_" + strings.Repeat("é", 22),
			"very long":                "Bearer platform_pat_" + strings.Repeat("A", 8000),
			"unknown":                  "Bearer platform_pat_" + strings.Repeat("A", 43),
			"altered":                  "Bearer " + token[:len(token)-2] + "AA",
			"with trailing characters": "Bearer " + token + "x",
			"a session token":          "Bearer " + w.member.Value,
			"another scheme":           "Basic " + token,
			"no token":                 "Bearer",
		}
		for name, header := range cases {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				r := w.call(t, http.MethodGet, "/api/agents", "", "Authorization", header)
				expectProblem(g, r, http.StatusUnauthorized)
				g.Expect(w.call(t, http.MethodGet, "/livez", "", "Authorization", header).status).To(Equal(http.StatusOK), "routes without authentication still answer")
			})
		}
		g := NewWithT(t)
		g.Expect(w.call(t, http.MethodGet, "/api/agents", "", "Authorization", "bearer "+token).status).To(Equal(http.StatusOK), "the scheme is case-insensitive")
		expectProblem(g, w.call(t, http.MethodGet, "/api/agents", "", append(withCookie(w.member), "Authorization", "Bearer platform_pat_"+strings.Repeat("A", 43))...),
			http.StatusUnauthorized)
	})
}

func TestPATAuditRecordsHoldNoTokenMaterial(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		w := newPATWorld(t, opts)
		id, token := w.createPAT(t, w.member, w.ws, "resources/read")
		prefix := token[:len("platform_pat_")+8]
		g.Expect(w.call(t, http.MethodGet, "/api/agents", "", bearer(token)...).status).To(Equal(http.StatusOK))
		g.Expect(w.call(t, http.MethodDelete, "/api/identity/pat/"+id, "", withCookie(w.member)...).status).To(Equal(http.StatusNoContent))
		g.Expect(w.call(t, http.MethodDelete, "/api/identity/pat", "", withCookie(w.member)...).status).To(Equal(http.StatusNoContent))

		events, err := w.svc.Audit.Latest(context.Background(), 0)
		g.Expect(err).NotTo(HaveOccurred())
		var actions []string
		for _, e := range events {
			actions = append(actions, e.Action)
			record := fmt.Sprintf("%+v", e)
			for _, material := range []string{token, token[len("platform_pat_"):], prefix, prefix[len("platform_pat_"):], "deploy-bot"} {
				g.Expect(record).NotTo(ContainSubstring(material), "audit records hold no token, prefix or name")
			}
		}
		g.Expect(actions).To(ContainElements("personal-access-token.created", "personal-access-token.revoked", "personal-access-token.revoked-all"))
	})
}

func TestThePATOperationsAreDocumentedWithTheirPoliciesAndTheAllowList(t *testing.T) {
	g := NewWithT(t)
	for _, typ := range []reflect.Type{reflect.TypeFor[identityapi.PersonalAccessToken](), reflect.TypeFor[identityapi.NewPersonalAccessToken]()} {
		field, ok := typ.FieldByName("Permissions")
		g.Expect(ok).To(BeTrue())
		g.Expect(field.Tag.Get("enum")).To(Equal(identity.PATAllowed.String()), "the documented enum of %s is the allow-list", typ.Name())
	}

	resp, err := http.Get(devServer(t).URL + "/openapi/v1.json")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string   `json:"operationId"`
			Tags        []string `json:"tags"`
			Policy      string   `json:"x-platform-policy"`
		} `json:"paths"`
	}
	g.Expect(json.NewDecoder(resp.Body).Decode(&doc)).To(Succeed())
	want := map[string]string{
		"get /api/identity/pat":                                       "list-personal-access-tokens " + httpapi.PolicyInteractiveUser,
		"post /api/identity/pat":                                      "create-personal-access-token " + httpapi.PolicyInteractiveUser,
		"delete /api/identity/pat/{tokenId}":                          "revoke-personal-access-token " + httpapi.PolicyInteractiveUser,
		"delete /api/identity/pat":                                    "revoke-all-personal-access-tokens " + httpapi.PolicyInteractiveUser,
		"get /api/identity/principals/{principalId}/pat":              "list-principal-personal-access-tokens " + httpapi.PolicyPlatformAdmin,
		"delete /api/identity/principals/{principalId}/pat/{tokenId}": "revoke-principal-personal-access-token " + httpapi.PolicyPlatformAdmin,
		"delete /api/identity/principals/{principalId}/pat":           "revoke-all-principal-personal-access-tokens " + httpapi.PolicyPlatformAdmin,
	}
	for route, expected := range want {
		method, path, _ := strings.Cut(route, " ")
		op, ok := doc.Paths[path][method]
		g.Expect(ok).To(BeTrue(), route)
		g.Expect(op.OperationID+" "+op.Policy).To(Equal(expected), route)
		g.Expect(op.Tags).To(Equal([]string{"Personal access tokens"}), route)
	}
}
