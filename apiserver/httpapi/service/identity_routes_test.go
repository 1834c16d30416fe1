package service_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

func accountBody(username, password, workspace, role string) string {
	return fmt.Sprintf(`{"username":%q,"password":%q,"email":%q,"workspace":%q,"role":%q}`,
		username, password, strings.ToLower(username)+"@example.test", workspace, role)
}

// The spec's supported handover: grant the successor, the successor authenticates, the successor
// disables and then revokes the predecessor.
func TestTheHandoverOfPlatformAdministration(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		predecessor := e.adminCookie

		created := e.do(predecessor, http.MethodPost, "/api/identity/accounts/", accountBody("Successor", adminPassword, e.ws.RouteName, "Viewer"))
		g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
		g.Expect(created.body).To(HaveKeyWithValue("initialAccess", HaveKeyWithValue("role", "Viewer")))
		successorID := created.body["principalId"].(string)

		granted := e.do(predecessor, http.MethodPut, "/api/identity/platform-administrators/"+successorID, "")
		g.Expect(granted.status).To(Equal(http.StatusOK), "%v", granted.body)
		g.Expect(granted.body).To(And(HaveKeyWithValue("active", true), HaveKeyWithValue("grantedBy", e.admin.ID)))

		successor := e.signIn("Successor", adminPassword)
		list := e.do(successor, http.MethodGet, "/api/identity/platform-administrators", "")
		g.Expect(list.status).To(Equal(http.StatusOK))
		g.Expect(list.body["items"]).To(HaveLen(2))

		predecessorAccount, err := e.svc.LocalAccountOf(context.Background(), e.admin.ID)
		g.Expect(err).NotTo(HaveOccurred())
		disabled := e.do(successor, http.MethodPut, "/api/identity/accounts/"+predecessorAccount.AccountID+"/status", `{"status":"Disabled"}`)
		g.Expect(disabled.status).To(Equal(http.StatusOK), "%v", disabled.body)
		g.Expect(disabled.body).To(And(HaveKeyWithValue("status", "Disabled"), HaveKeyWithValue("platformAdministrator", true)))
		expectProblem(g, e.do(predecessor, http.MethodGet, "/api/identity/platform-administrators", ""), http.StatusUnauthorized)

		g.Expect(e.do(successor, http.MethodDelete, "/api/identity/platform-administrators/"+e.admin.ID, "").status).To(Equal(http.StatusNoContent))
		list = e.do(successor, http.MethodGet, "/api/identity/platform-administrators", "")
		g.Expect(list.body["items"]).To(ConsistOf(HaveKeyWithValue("principalId", successorID)))

		// The successor is now the last active administrator: it can neither leave nor lock itself out.
		expectProblem(g, e.do(successor, http.MethodDelete, "/api/identity/platform-administrators/"+successorID, ""), http.StatusUnprocessableEntity)
		successorAccount := created.body["accountId"].(string)
		expectProblem(g, e.do(successor, http.MethodPut, "/api/identity/accounts/"+successorAccount+"/status", `{"status":"Disabled"}`), http.StatusUnprocessableEntity)

		// Re-enabling the predecessor restores no grant: it was revoked separately.
		g.Expect(e.do(successor, http.MethodPut, "/api/identity/accounts/"+predecessorAccount.AccountID+"/status", `{"status":"Active"}`).status).To(Equal(http.StatusOK))
		again := e.signIn(adminUser, adminPassword)
		expectProblem(g, e.do(again, http.MethodGet, "/api/identity/platform-administrators", ""), http.StatusForbidden)

		g.Expect(e.auditActions()).To(ContainElements("local-account.created", "platform-administrator.granted",
			"local-account.disabled", "platform-administrator.revoked", "local-account.enabled"))
	})
}

func TestPlatformAdministratorRejectionsAnswerConflictOrUnprocessable(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		dormant := e.account("Dormant", e.ws, identity.RoleViewer)
		g.Expect(e.do(e.adminCookie, http.MethodPut, "/api/identity/accounts/"+dormant.AccountID+"/status", `{"status":"Disabled"}`).status).To(Equal(http.StatusOK))

		r := e.do(e.adminCookie, http.MethodPut, "/api/identity/platform-administrators/"+dormant.PrincipalID, "")
		expectProblem(g, r, http.StatusConflict)
		g.Expect(r.body["detail"]).To(ContainSubstring("disabled"))
		expectProblem(g, e.do(e.adminCookie, http.MethodPut, "/api/identity/platform-administrators/no-such-principal", ""), http.StatusNotFound)
		expectProblem(g, e.do(e.adminCookie, http.MethodDelete, "/api/identity/platform-administrators/"+dormant.PrincipalID, ""), http.StatusNotFound)
		expectProblem(g, e.do(e.adminCookie, http.MethodDelete, "/api/identity/platform-administrators/"+e.admin.ID, ""), http.StatusUnprocessableEntity)
		expectProblem(g, e.do(e.adminCookie, http.MethodPut, "/api/identity/accounts/no-such-account/status", `{"status":"Disabled"}`), http.StatusNotFound)
		expectProblem(g, e.do(e.adminCookie, http.MethodPut, "/api/identity/accounts/"+dormant.AccountID+"/status", `{"status":"Gone"}`), http.StatusUnprocessableEntity)
	})
}

func TestAuditEventsAreNewestFirstFiftyByDefaultAndAtMost200(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		for range 60 {
			_, _, _ = e.svc.Login(context.Background(), "nobody", "Wrong-Password-1!")
		}
		g.Expect(e.do(e.adminCookie, http.MethodPost, "/api/auth/logout", "").status).To(Equal(http.StatusNoContent))
		admin := e.signIn(adminUser, adminPassword)

		r := e.do(admin, http.MethodGet, "/api/identity/audit-events", "")
		g.Expect(r.status).To(Equal(http.StatusOK), "%v", r.body)
		items := r.body["items"].([]any)
		g.Expect(items).To(HaveLen(50))
		g.Expect(items[0]).To(And(HaveKeyWithValue("action", "local-account.login"), HaveKeyWithValue("outcome", "success")), "newest first")
		g.Expect(items[1]).To(HaveKeyWithValue("action", "local-account.logout"))
		g.Expect(items[2]).To(And(HaveKeyWithValue("action", "local-account.login"), HaveKeyWithValue("reasonCode", "invalid-credentials")))

		g.Expect(e.do(admin, http.MethodGet, "/api/identity/audit-events?limit=3", "").body["items"]).To(HaveLen(3))
		g.Expect(e.do(admin, http.MethodGet, "/api/identity/audit-events?limit=200", "").body["items"]).To(HaveLen(65))
		expectProblem(g, e.do(admin, http.MethodGet, "/api/identity/audit-events?limit=201", ""), http.StatusUnprocessableEntity)
		expectProblem(g, e.do(admin, http.MethodGet, "/api/identity/audit-events?limit=0", ""), http.StatusUnprocessableEntity)
	})
}

func TestSelectingAWorkspaceSetsTheSelectionCookieAndAnInaccessibleOneIsNotFound(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		second := e.workspace("second")
		foreign := e.workspace("foreign")
		m := e.account("Member", e.ws, identity.RoleMember)
		_, err := e.svc.SetWorkspaceMembership(context.Background(), e.admin.ID, second.ID, m.PrincipalID, identity.RoleViewer)
		g.Expect(err).NotTo(HaveOccurred())
		member := e.signIn("Member", adminPassword)

		before := e.do(member, http.MethodGet, "/api/identity/context", "")
		g.Expect(before.body).To(HaveKeyWithValue("workspace", HaveKeyWithValue("id", e.ws.ID)), "the first membership")

		r := e.do(member, http.MethodPost, "/api/identity/context/workspace", fmt.Sprintf(`{"workspace":%q}`, second.RouteName))
		g.Expect(r.status).To(Equal(http.StatusOK), "%v", r.body)
		g.Expect(r.body).To(HaveKeyWithValue("workspace", HaveKeyWithValue("id", second.ID)))
		g.Expect(r.body["permissions"]).To(ConsistOf("workspaces/read", "resources/read", "runs/read"), "Viewer there")
		c, err := http.ParseSetCookie(r.header.Get("Set-Cookie"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c.Name).To(Equal(httpapi.WorkspaceCookie))
		g.Expect(c.Value).To(Equal(second.ID))
		g.Expect(c.HttpOnly).To(BeTrue())
		g.Expect(c.SameSite).To(Equal(http.SameSiteLaxMode))
		g.Expect(c.Secure).To(BeFalse(), "plain HTTP here; Secure over TLS")

		after := e.do(nil, http.MethodGet, "/api/identity/context", "", "Cookie", member.Name+"="+member.Value+"; "+c.Name+"="+c.Value)
		g.Expect(after.body).To(HaveKeyWithValue("workspace", HaveKeyWithValue("id", second.ID)), "the cookie selects it")

		for _, selector := range []string{foreign.RouteName, foreign.ID, "no-such-workspace"} {
			r := e.do(member, http.MethodPost, "/api/identity/context/workspace", fmt.Sprintf(`{"workspace":%q}`, selector))
			expectProblem(g, r, http.StatusNotFound)
			g.Expect(r.header.Values("Set-Cookie")).To(BeEmpty())
		}
		// A Platform administrator may select any active workspace.
		g.Expect(e.do(e.adminCookie, http.MethodPost, "/api/identity/context/workspace", fmt.Sprintf(`{"workspace":%q}`, foreign.ID)).status).To(Equal(http.StatusOK))
	})
}

func TestTheSelectionCookieIsSecureOverTLS(t *testing.T) {
	g := NewWithT(t)
	handler, _, _ := localHandler(t, nil)
	server := httptest.NewTLSServer(handler)
	t.Cleanup(server.Close)
	ws := uniqueWorkspace("tls-select")
	resp, err := server.Client().Post(server.URL+"/api/auth/bootstrap", "application/json", strings.NewReader(bootstrapBody(ws, adminPassword)))
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	session := resp.Cookies()[0]

	req, _ := http.NewRequest(http.MethodPost, server.URL+"/api/identity/context/workspace", strings.NewReader(fmt.Sprintf(`{"workspace":%q}`, ws)))
	req.Header.Set("Content-Type", "application/json")
	req.AddCookie(session)
	resp, err = server.Client().Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(resp.Cookies()).To(ConsistOf(And(HaveField("Name", httpapi.WorkspaceCookie), HaveField("Secure", true), HaveField("HttpOnly", true))))
}

func TestTheContextNamesThePrincipalTenantWorkspaceAndPermissions(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		r := e.do(e.adminCookie, http.MethodGet, "/api/identity/context", "")
		g.Expect(r.status).To(Equal(http.StatusOK), "%v", r.body)
		g.Expect(r.body).To(And(
			HaveKeyWithValue("principal", And(HaveKeyWithValue("id", e.admin.ID), HaveKeyWithValue("displayName", "Grace"), HaveKeyWithValue("kind", "Human"))),
			HaveKeyWithValue("tenant", And(HaveKeyWithValue("id", e.ws.TenantID), HaveKeyWithValue("name", "Navy"))),
			HaveKeyWithValue("workspace", And(HaveKeyWithValue("id", e.ws.ID), HaveKeyWithValue("name", e.ws.RouteName))),
			HaveKeyWithValue("platformAdministrator", true),
			HaveKeyWithValue("credential", "session"),
		), "the bootstrap's declared default context")
		g.Expect(r.body["permissions"]).To(HaveLen(len(identity.Catalog)))

		e.account("Viewer", e.ws, identity.RoleViewer)
		viewer := e.do(e.signIn("Viewer", adminPassword), http.MethodGet, "/api/identity/context", "")
		g.Expect(viewer.body).To(HaveKeyWithValue("platformAdministrator", false))
		g.Expect(viewer.body["permissions"]).To(ConsistOf("workspaces/read", "resources/read", "runs/read"))
	})
}

func TestPreferencesAreAlwaysTheSessionPrincipals(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		other := e.account("Other", e.ws, identity.RoleViewer)
		otherCookie := e.signIn("Other", adminPassword)

		r := e.do(e.adminCookie, http.MethodGet, "/api/identity/preferences", "")
		g.Expect(r.status).To(Equal(http.StatusOK))
		g.Expect(r.body).To(And(HaveKeyWithValue("principalId", e.admin.ID), HaveKeyWithValue("theme", "System")))
		g.Expect(r.body).NotTo(HaveKey("updatedAt"), "the defaults were never saved")

		r = e.do(e.adminCookie, http.MethodPut, "/api/identity/preferences", `{"theme":"Dark"}`)
		g.Expect(r.status).To(Equal(http.StatusOK), "%v", r.body)
		g.Expect(r.body).To(And(HaveKeyWithValue("principalId", e.admin.ID), HaveKeyWithValue("theme", "Dark"), HaveKey("updatedAt")))

		// The body cannot name another Principal.
		expectProblem(g, e.do(e.adminCookie, http.MethodPut, "/api/identity/preferences",
			fmt.Sprintf(`{"theme":"Light","principalId":%q}`, other.PrincipalID)), http.StatusUnprocessableEntity)
		expectProblem(g, e.do(e.adminCookie, http.MethodPut, "/api/identity/preferences", `{"theme":"Sepia"}`), http.StatusUnprocessableEntity)
		g.Expect(e.do(otherCookie, http.MethodGet, "/api/identity/preferences", "").body).To(And(
			HaveKeyWithValue("principalId", other.PrincipalID), HaveKeyWithValue("theme", "System")))
		g.Expect(e.do(e.adminCookie, http.MethodGet, "/api/identity/preferences", "").body).To(HaveKeyWithValue("theme", "Dark"))
	})
}

// Resource-based authorization: the workspace a route reads is the one the request was authorized
// in, whatever header or cookie says.
func TestAWorkspaceIsReadOnlyThroughItsOwnContext(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		foreign := e.workspace("foreign")
		e.account("Member", e.ws, identity.RoleMember)
		member := e.signIn("Member", adminPassword)

		r := e.do(member, http.MethodGet, "/api/identity/workspaces/"+e.ws.RouteName, "")
		g.Expect(r.status).To(Equal(http.StatusOK), "%v", r.body)
		g.Expect(r.body).To(And(HaveKeyWithValue("id", e.ws.ID), HaveKeyWithValue("tenantId", e.ws.TenantID)))
		expectProblem(g, e.do(member, http.MethodGet, "/api/identity/workspaces/"+foreign.ID, "", httpapi.WorkspaceHeader, e.ws.RouteName), http.StatusNotFound)
		expectProblem(g, e.do(member, http.MethodGet, "/api/identity/workspaces/"+foreign.ID+"/memberships", "", httpapi.WorkspaceHeader, e.ws.RouteName), http.StatusNotFound)

		_, err := db.DB().Exec(db.Rebind(`UPDATE workspaces SET status = 'Disabled' WHERE id = ?`), foreign.ID)
		g.Expect(err).NotTo(HaveOccurred())
		expectProblem(g, e.do(e.adminCookie, http.MethodGet, "/api/identity/workspaces/"+foreign.ID, ""), http.StatusNotFound)

		// The list shows the caller's readable workspaces; all of them to a Platform administrator.
		e.account("Owner", e.ws, identity.RoleOwner)
		owner := e.signIn("Owner", adminPassword)
		g.Expect(e.do(owner, http.MethodGet, "/api/identity/workspaces", "").body["items"]).To(ConsistOf(HaveKeyWithValue("id", e.ws.ID)))
		g.Expect(e.do(e.adminCookie, http.MethodGet, "/api/identity/workspaces", "").body["items"]).To(ConsistOf(
			HaveKeyWithValue("id", e.ws.ID), And(HaveKeyWithValue("id", foreign.ID), HaveKeyWithValue("status", "Disabled"))))
	})
}

func TestCreatingAWorkspaceProvisionsItsNamespaceAndMakesTheCreatorOwner(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		e.account("Admin", e.ws, identity.RoleAdmin)
		creator := e.signIn("Admin", adminPassword)
		name := uniqueWorkspace("made")

		r := e.do(creator, http.MethodPost, "/api/identity/workspaces", fmt.Sprintf(`{"name":%q,"displayName":"Made here"}`, name))
		g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)
		g.Expect(r.body).To(And(HaveKeyWithValue("name", name), HaveKeyWithValue("tenantId", e.ws.TenantID), HaveKeyWithValue("displayName", "Made here")))
		g.Expect(kube.Get(context.Background(), client.ObjectKey{Name: name}, &corev1.Namespace{})).To(Succeed())
		memberships := e.do(creator, http.MethodGet, "/api/identity/workspaces/"+name+"/memberships", "")
		g.Expect(memberships.status).To(Equal(http.StatusOK), "%v", memberships.body)
		g.Expect(memberships.body["items"]).To(ConsistOf(And(HaveKeyWithValue("displayName", "Admin"), HaveKeyWithValue("role", "Owner"),
			HaveKeyWithValue("scope", "workspace"))))
		g.Expect(e.do(creator, http.MethodGet, "/api/agents", "", httpapi.WorkspaceHeader, name).status).To(Equal(http.StatusOK))

		expectProblem(g, e.do(creator, http.MethodPost, "/api/identity/workspaces", fmt.Sprintf(`{"name":%q}`, name)), http.StatusConflict)
		expectProblem(g, e.do(creator, http.MethodPost, "/api/identity/workspaces", `{"name":"kube-public"}`), http.StatusUnprocessableEntity)
		expectProblem(g, e.do(creator, http.MethodPost, "/api/identity/workspaces", `{"name":"default"}`), http.StatusConflict)
		expectProblem(g, e.do(creator, http.MethodPost, "/api/identity/workspaces", `{"name":"Not_A_Label"}`), http.StatusUnprocessableEntity)

		byAdmin := uniqueWorkspace("by-admin")
		g.Expect(e.do(e.adminCookie, http.MethodPost, "/api/identity/workspaces", fmt.Sprintf(`{"name":%q}`, byAdmin)).status).To(Equal(http.StatusCreated))
		g.Expect(e.do(e.adminCookie, http.MethodGet, "/api/identity/workspaces/"+byAdmin+"/memberships", "").body["items"]).To(BeEmpty(),
			"a Platform administrator gets no membership")
	})
}

func TestMembershipRoutesKeepAnOwnerAndAddTheTenantMembership(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		owner := e.account("Owner", e.ws, identity.RoleOwner)
		elsewhere := e.workspace("elsewhere")
		newcomer := e.account("Newcomer", elsewhere, identity.RoleViewer)
		ownerCookie := e.signIn("Owner", adminPassword)
		path := "/api/identity/workspaces/" + e.ws.ID + "/memberships/"

		expectProblem(g, e.do(ownerCookie, http.MethodPut, path+owner.PrincipalID, `{"role":"Admin"}`), http.StatusConflict)
		expectProblem(g, e.do(ownerCookie, http.MethodDelete, path+owner.PrincipalID, ""), http.StatusConflict)
		expectProblem(g, e.do(ownerCookie, http.MethodPut, path+"no-such-principal", `{"role":"Admin"}`), http.StatusNotFound)
		expectProblem(g, e.do(ownerCookie, http.MethodDelete, path+newcomer.PrincipalID, ""), http.StatusNotFound)

		r := e.do(ownerCookie, http.MethodPut, path+newcomer.PrincipalID, `{"role":"Owner"}`)
		g.Expect(r.status).To(Equal(http.StatusOK), "%v", r.body)
		g.Expect(r.body).To(And(HaveKeyWithValue("role", "Owner"), HaveKeyWithValue("scope", "workspace")))
		g.Expect(e.do(ownerCookie, http.MethodPut, path+owner.PrincipalID, `{"role":"Admin"}`).status).To(Equal(http.StatusOK), "another Owner exists now")

		// The former Owner is an Admin now: it cannot take away more than it holds.
		expectProblem(g, e.do(ownerCookie, http.MethodDelete, path+newcomer.PrincipalID, ""), http.StatusForbidden)
		expectProblem(g, e.do(ownerCookie, http.MethodPut, path+owner.PrincipalID, `{"role":"Owner"}`), http.StatusForbidden)

		members := e.do(e.adminCookie, http.MethodGet, "/api/identity/members", "")
		g.Expect(members.status).To(Equal(http.StatusOK), "%v", members.body)
		g.Expect(members.body["items"]).To(ContainElement(And(HaveKeyWithValue("principalId", newcomer.PrincipalID),
			HaveKeyWithValue("roles", ContainElement(And(HaveKeyWithValue("workspaceId", e.ws.ID), HaveKeyWithValue("role", "Owner")))))))
		org := e.do(e.adminCookie, http.MethodGet, "/api/identity/organization", "")
		g.Expect(org.status).To(Equal(http.StatusOK), "%v", org.body)
		g.Expect(org.body).To(And(HaveKeyWithValue("tenant", HaveKeyWithValue("id", e.ws.TenantID)),
			HaveKeyWithValue("counts", And(HaveKeyWithValue("workspaces", BeNumerically("==", 2)), HaveKeyWithValue("members", BeNumerically("==", 2))))))
		g.Expect(e.auditActions()).To(ContainElements("workspace-membership.set"))
	})
}

// Neither Problem Details nor the audit log repeat a username, password or e-mail address.
func TestAccountErrorsAndAuditHoldNoUsernamesPasswordsOrEmails(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		secrets := []string{"Hedy.Lamarr", "hedy.lamarr@example.test", "weakpass", "Frequency-Hopping-1942!", strings.Repeat("Aa1!", 300)}

		for body, status := range map[string]int{
			accountBody("Hedy.Lamarr", "weakpass", e.ws.RouteName, "Member"):                                                                                           http.StatusUnprocessableEntity,
			accountBody("Hedy.Lamarr", strings.Repeat("Aa1!", 300), e.ws.RouteName, "Member"):                                                                          http.StatusUnprocessableEntity,
			`{"username":" Hedy.Lamarr","password":"Frequency-Hopping-1942!","workspace":"` + e.ws.ID + `","role":"Member"}`:                                           http.StatusUnprocessableEntity,
			`{"username":"Hedy.Lamarr","password":"Frequency-Hopping-1942!","email":"hedy.lamarr@example.test at home","workspace":"` + e.ws.ID + `","role":"Member"}`: http.StatusUnprocessableEntity,
			accountBody("Hedy.Lamarr", "Frequency-Hopping-1942!", "no-such-workspace", "Member"):                                                                       http.StatusNotFound,
		} {
			r := e.do(e.adminCookie, http.MethodPost, "/api/identity/accounts/", body)
			expectProblem(g, r, status)
			for _, secret := range secrets {
				g.Expect(fmt.Sprint(r.body)).NotTo(ContainSubstring(strings.TrimSpace(secret)))
			}
		}
		r := e.do(e.adminCookie, http.MethodPost, "/api/identity/accounts/", accountBody("Hedy.Lamarr", "Frequency-Hopping-1942!", e.ws.RouteName, "Member"))
		g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)
		taken := e.do(e.adminCookie, http.MethodPost, "/api/identity/accounts/", accountBody("HEDY.lamarr", "Frequency-Hopping-1942!", e.ws.RouteName, "Member"))
		expectProblem(g, taken, http.StatusConflict)
		g.Expect(strings.ToLower(fmt.Sprint(taken.body))).NotTo(ContainSubstring("hedy"))

		events, err := e.svc.LatestAuditEvents(context.Background(), 0)
		g.Expect(err).NotTo(HaveOccurred())
		for _, ev := range events {
			for _, secret := range secrets {
				g.Expect(fmt.Sprintf("%+v", ev)).NotTo(ContainSubstring(secret))
			}
		}
		g.Expect(e.auditActions()).To(ContainElement("local-account.created"))
	})
}

func TestTheAccountListAnswersOnlyItsExactPath(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		r := e.do(e.adminCookie, http.MethodGet, "/api/identity/accounts/", "")
		g.Expect(r.status).To(Equal(http.StatusOK))
		g.Expect(r.body["items"]).To(ConsistOf(And(HaveKeyWithValue("principalId", e.admin.ID), HaveKeyWithValue("platformAdministrator", true),
			HaveKeyWithValue("username", adminUser), Not(HaveKey("passwordHash")))))
		expectProblem(g, e.do(e.adminCookie, http.MethodGet, "/api/identity/accounts/anything/else", ""), http.StatusNotFound)
	})
}
