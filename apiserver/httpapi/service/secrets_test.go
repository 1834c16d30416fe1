package service_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/ownerscope"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/secrets"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
)

func vaultBody(name, grants string) string {
	return `{"apiVersion":"platform/v1","kind":"Vault","metadata":{"name":"` + name + `"},"definition":{"displayName":"Vault ` + name +
		`","provider":"Local","usePolicy":{"grants":[` + grants + `]}}}`
}

func secretBody(name, vault, vaultScope, grants string) string {
	ref := `{"name":"` + vault + `"`
	if vaultScope != "" {
		ref += `,"scopeRef":"` + vaultScope + `"`
	}
	return `{"apiVersion":"platform/v1","kind":"Secret","metadata":{"name":"` + name + `"},"definition":{"displayName":"Secret ` + name +
		`","vault":` + ref + `},"type":"opaque","usePolicy":{"grants":[` + grants + `]}}}`
}

func grantJSON(scopeRef string, descendants bool) string {
	return fmt.Sprintf(`{"scopeRef":%q,"includeDescendants":%t}`, scopeRef, descendants)
}

// scopePaths are the collection prefixes of the three owner scopes of a fixture.
func scopePaths(tenantID string) map[string]string {
	return map[string]string{"workspace": "/api", "instance": "/api/instance", "tenant": "/api/tenants/" + tenantID}
}

func TestSecretsAndVaultsArePutWithETagsAndTheirValuesAreWriteOnly(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		e := newIdentityEnv(t, db)
		suffix := strings.ToLower(randomName())
		for scope, prefix := range scopePaths(e.ws.TenantID) {
			t.Run(scope, func(t *testing.T) {
				g := NewWithT(t)
				as := func(method, path, body string, headers ...string) response {
					return e.do(e.adminCookie, method, path, body, append(headers, httpapi.WorkspaceHeader, e.ws.RouteName)...)
				}
				vault, secret := "vault-"+suffix, "secret-"+suffix
				created := as(http.MethodPut, prefix+"/vaults/"+vault, vaultBody(vault, ""))
				g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
				g.Expect(created.header.Get("ETag")).NotTo(BeEmpty())
				again := as(http.MethodPut, prefix+"/vaults/"+vault, vaultBody(vault, ""))
				expectProblem(g, again, http.StatusPreconditionRequired)

				r := as(http.MethodPut, prefix+"/secrets/"+secret, secretBody(secret, vault, "", ""))
				g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)
				first := r.header.Get("ETag")
				expectProblem(g, as(http.MethodPut, prefix+"/secrets/"+secret, secretBody(secret, vault, "", "")), http.StatusPreconditionRequired)
				expectProblem(g, as(http.MethodPut, prefix+"/secrets/"+secret, secretBody(secret, vault, "", ""), "If-Match", `"1"`), http.StatusPreconditionFailed)
				replaced := as(http.MethodPut, prefix+"/secrets/"+secret, strings.Replace(secretBody(secret, vault, "", ""), "Secret "+secret, "Renamed", 1), "If-Match", first)
				g.Expect(replaced.status).To(Equal(http.StatusOK), "%v", replaced.body)
				g.Expect(replaced.body["definition"]).To(HaveKeyWithValue("displayName", "Renamed"))
				renamed := as(http.MethodPut, prefix+"/secrets/"+secret, secretBody("another-name", vault, "", ""), "If-Match", replaced.header.Get("ETag"))
				expectProblem(g, renamed, http.StatusUnprocessableEntity)
				g.Expect(renamed.body["errors"]).To(ContainElement(HaveKeyWithValue("location", "body.metadata.name")), "the name cannot change")

				const value = "sk-write-only-4c1e9b"
				put := as(http.MethodPut, prefix+"/secrets/"+secret+"/value", `{"value":"`+value+`"}`)
				g.Expect(put.status).To(Equal(http.StatusNoContent), "%v", put.body)
				g.Expect(put.body).To(BeEmpty())
				read := as(http.MethodGet, prefix+"/secrets/"+secret, "")
				g.Expect(read.status).To(Equal(http.StatusOK))
				g.Expect(fmt.Sprint(read.body)).NotTo(ContainSubstring(value))
				list := as(http.MethodGet, prefix+"/secrets", "")
				g.Expect(list.status).To(Equal(http.StatusOK))
				g.Expect(list.body["items"]).To(ContainElement(HaveKeyWithValue("metadata", HaveKeyWithValue("name", secret))))
				g.Expect(fmt.Sprint(list.body)).NotTo(ContainSubstring(value))
				noRead := as(http.MethodGet, prefix+"/secrets/"+secret+"/value", "")
				expectProblem(g, noRead, http.StatusMethodNotAllowed)
				g.Expect(noRead.body["detail"]).To(ContainSubstring("allowed: PUT, DELETE"), "a value is written and deleted, never read")
				g.Expect(fmt.Sprint(noRead.body)).NotTo(ContainSubstring(value))

				g.Expect(as(http.MethodDelete, prefix+"/secrets/"+secret+"/value", "").status).To(Equal(http.StatusNoContent))
				expectProblem(g, as(http.MethodDelete, prefix+"/secrets/"+secret+"/value", ""), http.StatusNotFound)
				expectProblem(g, as(http.MethodPut, prefix+"/secrets/missing-"+suffix+"/value", `{"value":"x"}`), http.StatusNotFound)
			})
		}
	})
}

func TestBadSecretInputIsRefusedWithProblemDetailsAndNothingIsStored(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		e := newIdentityEnv(t, db)
		g := NewWithT(t)
		sibling := e.workspace("sibling")
		as := func(method, path, body string) response {
			return e.do(e.adminCookie, method, path, body, httpapi.WorkspaceHeader, e.ws.RouteName)
		}
		g.Expect(as(http.MethodPut, "/api/vaults/local", vaultBody("local", "")).status).To(Equal(http.StatusCreated))
		g.Expect(as(http.MethodPut, "/api/secrets/key", secretBody("key", "local", "", "")).status).To(Equal(http.StatusCreated))
		g.Expect(as(http.MethodPut, "/api/secrets/dangling", secretBody("dangling", "nowhere", "", "")).status).To(Equal(http.StatusCreated))
		tenant := ownerscope.Of(ownerscope.Tenant, e.ws.TenantID).Ref()

		cases := map[string]struct {
			method, path, body string
			status             int
			location           string
			detail             string
		}{
			"a grant to a sibling workspace": {http.MethodPut, "/api/secrets/bad-sibling", secretBody("bad-sibling", "local", "", grantJSON("/workspaces/"+sibling.ID, false)),
				http.StatusUnprocessableEntity, "body.definition.usePolicy.grants[0].scopeRef", "never a sibling, an ancestor or another tenant's branch"},
			"a grant to an ancestor": {http.MethodPut, "/api/vaults/bad-ancestor", vaultBody("bad-ancestor", grantJSON(string(tenant), true)),
				http.StatusUnprocessableEntity, "body.definition.usePolicy.grants[0].scopeRef", "never a sibling, an ancestor"},
			"a Vault reference to a sibling": {http.MethodPut, "/api/secrets/bad-reach", secretBody("bad-reach", "local", "/workspaces/"+sibling.ID, ""),
				http.StatusUnprocessableEntity, "body.definition.vault.scopeRef", "neither the referrer's scope"},
			"an ancestor's Vault named without its scopeRef": {http.MethodPut, "/api/secrets/dangling/value", `{"value":"sk-never-stored"}`,
				http.StatusConflict, "", "names are never searched through parent scopes"},
			"a value over 65536 bytes": {http.MethodPut, "/api/secrets/key/value", `{"value":"` + strings.Repeat("x", secrets.MaxValueBytes+1) + `"}`,
				http.StatusUnprocessableEntity, "body.value", "at most 65536 bytes"},
			"an empty value": {http.MethodPut, "/api/secrets/key/value", `{"value":""}`,
				http.StatusUnprocessableEntity, "body.value", ""},
			"a body that is not JSON": {http.MethodPut, "/api/secrets/key/value", `sk-raw-value`,
				http.StatusBadRequest, "", ""},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				r := as(tc.method, tc.path, tc.body)
				expectProblem(g, r, tc.status)
				if tc.location != "" {
					g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", tc.location)))
				}
				g.Expect(fmt.Sprint(r.body)).To(ContainSubstring(tc.detail))
				g.Expect(fmt.Sprint(r.body)).NotTo(ContainSubstring("sk-"), "no value is echoed")
			})
		}
		g.Expect(countEntries(t, db)).To(BeZero(), "no value was stored")
		for _, name := range []string{"bad-sibling", "bad-reach"} {
			expectProblem(g, as(http.MethodGet, "/api/secrets/"+name, ""), http.StatusNotFound)
		}
		expectProblem(g, as(http.MethodGet, "/api/vaults/bad-ancestor", ""), http.StatusNotFound)
	})
}

func TestAMalformedOrReplacedMasterKeyRefusesValuesWithTheReasonAndTheServiceRunsOn(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		e := newIdentityEnv(t, db)
		g := NewWithT(t)
		as := func(method, path, body string) response {
			return e.do(e.adminCookie, method, path, body, httpapi.WorkspaceHeader, e.ws.RouteName)
		}
		g.Expect(as(http.MethodPut, "/api/vaults/local", vaultBody("local", "")).status).To(Equal(http.StatusCreated))
		g.Expect(as(http.MethodPut, "/api/secrets/key", secretBody("key", "local", "", "")).status).To(Equal(http.StatusCreated))
		g.Expect(as(http.MethodPut, "/api/secrets/key/value", `{"value":"sk-first"}`).status).To(Equal(http.StatusNoContent))
		original, err := os.ReadFile(e.vault.MasterKey.File)
		g.Expect(err).NotTo(HaveOccurred())

		for name, key := range map[string]struct {
			content, detail string
		}{
			"a key of the wrong length": {"c2hvcnQ=", "decodes to 5 bytes; it must be exactly 32 bytes"},
			"a key that is not Base64":  {"***not-base64***", "not one standard Base64 value"},
			"a replaced key":            {"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "stored under another master key"},
		} {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(os.WriteFile(e.vault.MasterKey.File, []byte(key.content), 0o600)).To(Succeed())
				defer os.WriteFile(e.vault.MasterKey.File, original, 0o600)
				r := as(http.MethodPut, "/api/secrets/key/value", `{"value":"sk-second"}`)
				expectProblem(g, r, http.StatusConflict)
				g.Expect(r.body["detail"]).To(ContainSubstring(key.detail))
				g.Expect(r.body["detail"]).NotTo(ContainSubstring(key.content), "the key is never echoed")
				status := as(http.MethodGet, "/api/local-vault", "")
				g.Expect(status.status).To(Equal(http.StatusOK), "the service runs on")
				g.Expect(fmt.Sprint(status.body)).NotTo(ContainSubstring(key.content))
			})
		}
		value, err := e.values.Value(context.Background(), e.ws.RouteName, "credential", platformv1.SecretReference{Name: "key"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(value)).To(Equal("sk-first"), "nothing was stored by the refused writes")
	})
}

func TestTheLocalVaultIsInitializedOnceByAPlatformAdministrator(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		e := newIdentityEnv(t, db)
		g := NewWithT(t)
		g.Expect(os.Remove(e.vault.MasterKey.File)).To(Succeed())
		status := e.do(e.adminCookie, http.MethodGet, "/api/local-vault", "")
		g.Expect(status.body).To(HaveKeyWithValue("status", "Unavailable"))
		g.Expect(status.body).To(HaveKeyWithValue("reason", platformv1.MasterKeyMissingReason))

		r := e.do(e.adminCookie, http.MethodPost, "/api/local-vault/initialize", "")
		g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)
		g.Expect(r.body).To(Equal(map[string]any{"status": "Available", "path": e.vault.MasterKey.File}))
		info, err := os.Stat(e.vault.MasterKey.File)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
		key, _ := os.ReadFile(e.vault.MasterKey.File)
		g.Expect(fmt.Sprint(r.body)).NotTo(ContainSubstring(strings.TrimSpace(string(key))))

		again := e.do(e.adminCookie, http.MethodPost, "/api/local-vault/initialize", "")
		expectProblem(g, again, http.StatusConflict)
		g.Expect(again.body["detail"]).To(ContainSubstring("nothing was changed"))
		after, _ := os.ReadFile(e.vault.MasterKey.File)
		g.Expect(after).To(Equal(key))
		g.Expect(e.do(e.adminCookie, http.MethodGet, "/api/local-vault", "").body).To(HaveKeyWithValue("status", "Available"))
	})
}

func countEntries(t *testing.T, db *store.Store) int {
	t.Helper()
	var n int
	if err := db.DB().QueryRow(`SELECT COUNT(*) FROM local_vault_entries`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// secretFixtures are the Vaults and Secrets the table's rows read, replace and write values of,
// in the workspace, the instance and the tenant.
func (f *tableFixture) secretFixtures() {
	f.t.Helper()
	suffix := strings.ToLower(randomName())
	f.secretNames = map[string]string{}
	for scope, prefix := range scopePaths(f.ws.TenantID) {
		vault, secret := "table-vault-"+suffix, "table-secret-"+suffix
		f.secretNames[scope] = secret
		for path, body := range map[string]string{prefix + "/vaults/" + vault: vaultBody(vault, ""), prefix + "/secrets/" + secret: secretBody(secret, vault, "", "")} {
			if r := f.as(platformAdmin, http.MethodPut, path, body); r.status != http.StatusCreated {
				f.t.Fatalf("fixture %s: %d %v", path, r.status, r.body)
			}
		}
	}
}

// setValue writes a value of the scope's fixture Secret directly, for a row that removes it.
func (f *tableFixture) setValue(scope string) {
	f.t.Helper()
	ns := f.ws.RouteName
	switch scope {
	case "instance":
		ns = ownerscope.InstanceNamespace
	case "tenant":
		ns, _ = ownerscope.TenantNamespace(f.ws.TenantID)
	}
	secret := &platformv1.Secret{}
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: f.secretNames[scope]}, secret); err != nil {
		f.t.Fatal(err)
	}
	if err := f.values.SetValue(context.Background(), secret, []byte("sk-table")); err != nil {
		f.t.Fatal(err)
	}
}

// secretRows are the rows of the Secrets and Vaults area: the workspace's routes follow the
// resource permissions, the instance's and tenants' are for Platform administrators only.
func secretRows(rows map[string]tableRow) {
	for scope, id := range map[string]string{"workspace": "", "instance": "instance-", "tenant": "tenant-"} {
		read, write := workspaceRoles, ownersAndAdmins
		policyRead, policyWrite := httpapi.PolicyResourcesRead, httpapi.PolicyResourcesWrite
		if scope != "workspace" {
			read, write = platformAdminOnly, platformAdminOnly
			policyRead, policyWrite = httpapi.PolicyPlatformAdmin, httpapi.PolicyPlatformAdmin
		}
		prefix := func(f *tableFixture) string { return scopePaths(f.ws.TenantID)[scope] }
		for _, kind := range []string{"vault", "secret"} {
			rows["list-"+id+kind+"s"] = tableRow{policyRead, read(200), func(f *tableFixture, _ role) tableRequest {
				return tableRequest{method: http.MethodGet, path: prefix(f) + "/" + kind + "s"}
			}}
			rows["get-"+id+kind] = tableRow{policyRead, read(200), func(f *tableFixture, _ role) tableRequest {
				name := strings.Replace(f.secretNames[scope], "table-secret-", "table-"+kind+"-", 1)
				return tableRequest{method: http.MethodGet, path: prefix(f) + "/" + kind + "s/" + name}
			}}
			rows["put-"+id+kind] = tableRow{policyWrite, write(201), func(f *tableFixture, r role) tableRequest {
				name := "put-by-" + r.String() + "-" + strings.TrimPrefix(f.secretNames[scope], "table-secret-")
				body := vaultBody(name, "")
				if kind == "secret" {
					body = secretBody(name, "local", "", "")
				}
				return tableRequest{method: http.MethodPut, path: prefix(f) + "/" + kind + "s/" + name, body: body}
			}}
		}
		rows["put-"+id+"secret-value"] = tableRow{policyWrite, write(204), func(f *tableFixture, _ role) tableRequest {
			return tableRequest{method: http.MethodPut, path: prefix(f) + "/secrets/" + f.secretNames[scope] + "/value", body: `{"value":"sk-table"}`}
		}}
		rows["delete-"+id+"secret-value"] = tableRow{policyWrite, write(204), func(f *tableFixture, _ role) tableRequest {
			f.setValue(scope)
			return tableRequest{method: http.MethodDelete, path: prefix(f) + "/secrets/" + f.secretNames[scope] + "/value"}
		}}
	}
	// The fixture's Local Vault is initialized: the administrator reaches the route and is told
	// so (the first initialization is TestTheLocalVaultIsInitializedOnceByAPlatformAdministrator).
	rows["initialize-local-vault"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(409), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/local-vault/initialize"}
	}}
	rows["get-local-vault"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(200), get("/api/local-vault")}
}

// randomName is a short name part unique to this test binary's run.
func randomName() string { return uniqueWorkspace("s") }

func TestAnUnknownTenantsSecretsAreNotFound(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		e := newIdentityEnv(t, db)
		g := NewWithT(t)
		for _, path := range []string{"/api/tenants/0000000000000000000000000000dead/secrets", "/api/tenants/not-a-tenant/vaults/local"} {
			r := e.do(e.adminCookie, http.MethodGet, path, "")
			expectProblem(g, r, http.StatusNotFound)
		}
		r := e.do(e.adminCookie, http.MethodPut, "/api/tenants/0000000000000000000000000000dead/vaults/local", vaultBody("local", ""))
		expectProblem(g, r, http.StatusNotFound)
	})
}
