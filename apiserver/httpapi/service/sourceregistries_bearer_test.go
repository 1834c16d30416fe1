package service_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/packs/packstest"
	"platform.dev/platform/apiserver/sourceregistries"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/internal/registry"
	testregistry "platform.dev/platform/test/registry"
)

// realRegistries are the index URLs whose registrations the service tests refresh through the
// guarded client (over HTTPS, at a test registry) instead of a fakeRegistry.
var realRegistries sync.Map // index URL -> fetcher maker

func TestAPrivateRegistrationsBearerIsAnInstanceSecretResolvedPerRequestAndNeverInOutputAuditOrStoredRows(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		const token = "bearer-of-the-private-registry-5e81"
		reg, err := testregistry.New(t.TempDir())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(reg.Start("127.0.0.1:0")).To(Succeed())
		t.Cleanup(reg.Close)
		g.Expect(reg.AddArchive(packstest.Pack{Publisher: "acme", Name: "kit", Version: "1.0.0",
			Resources: map[string]string{"agents/kit.yaml": packstest.Agent("kit", "Help")}}.Zip())).To(Succeed())
		reg.RequireBearer(token)
		pool, err := registry.NewPool(reg.Transport())
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(pool.Close)
		realRegistries.Store(reg.IndexURL(), (&sourceregistries.Clients{Pool: pool, Credentials: sourceregistries.SecretCredentials(e.values.Value)}).Fetcher)
		t.Cleanup(func() { realRegistries.Delete(reg.IndexURL()) })

		var seen []string // every response body, to look for the token
		as := func(method, path, body string, headers ...string) response {
			r := e.do(e.adminCookie, method, path, body, append(headers, httpapi.WorkspaceHeader, e.ws.RouteName)...)
			seen = append(seen, r.raw)
			return r
		}
		suffix := strings.ToLower(randomName())
		vault, secret, name := "vault-"+suffix, "regtoken-"+suffix, "private-"+suffix
		g.Expect(as(http.MethodPut, "/api/instance/vaults/"+vault, vaultBody(vault, "")).status).To(Equal(http.StatusCreated))
		g.Expect(as(http.MethodPut, "/api/instance/secrets/"+secret, secretBody(secret, vault, "", "")).status).To(Equal(http.StatusCreated))
		g.Expect(as(http.MethodPut, "/api/instance/secrets/"+secret+"/value", `{"value":"`+token+`"}`).status).To(Equal(http.StatusNoContent))
		body := func(credential string) string {
			return `{"name":"` + name + `","properties":{"indexUrl":"` + reg.IndexURL() + `","trustPolicy":"trusted",` +
				`"endpointPolicy":{"allowPrivateNetwork":true},"authenticationMode":"staticBearer","credential":{"name":"` + credential + `","scopeRef":"/instance"}}}`
		}
		created := as(http.MethodPost, "/api/sourceregistries", body(secret))
		g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)

		refresh := func() response { return as(http.MethodPost, "/api/sourceregistries/"+name+"/refresh", "") }
		first := refresh()
		g.Expect(first.body).To(HaveKeyWithValue("outcome", "succeeded"), "the registry accepted the Secret's value as the bearer")
		g.Expect(reg.Authorizations(testregistry.IndexPath)).To(ConsistOf("Bearer " + token))

		// The value goes; then the reference names a Secret that does not exist.
		g.Expect(as(http.MethodDelete, "/api/instance/secrets/"+secret+"/value", "").status).To(Equal(http.StatusNoContent))
		g.Expect(refresh().body).To(And(HaveKeyWithValue("outcome", "failed"), HaveKeyWithValue("errorCode", "RegistryCredentialUnavailable")))
		read := as(http.MethodGet, "/api/sourceregistries/"+name, "")
		replaced := as(http.MethodPut, "/api/sourceregistries/"+name, body("no-such-secret"), "If-Match", read.header.Get("ETag"))
		g.Expect(replaced.status).To(Equal(http.StatusOK), "%v", replaced.body)
		g.Expect(refresh().body).To(And(HaveKeyWithValue("outcome", "failed"), HaveKeyWithValue("errorCode", "RegistryCredentialUnavailable")))
		g.Expect(reg.Requests(testregistry.IndexPath)).To(Equal(1), "without its credential no request is made")
		status := as(http.MethodGet, "/api/sourceregistries/"+name, "").body["status"]
		g.Expect(status).To(HaveKeyWithValue("currentObservationId", first.body["observationId"]), "the last-known-good observation stays")

		for _, path := range []string{"/api/sourceregistries", "/api/sourceregistries/" + name + "/refreshes", "/api/sourceregistries/" + name + "/trust",
			"/api/sourceregistries/discovery?publisher=acme", "/api/identity/audit-events?limit=50"} {
			g.Expect(as(http.MethodGet, path, "").status).To(Equal(http.StatusOK), path)
		}
		for _, raw := range seen {
			g.Expect(raw).NotTo(ContainSubstring(token))
		}
		stored := storetest.RowsText(t, db, "registry_observations", "registry_observation_shards", "registry_states", "registry_refreshes", "registry_first_seen", "audit_events")
		g.Expect(stored).To(ContainSubstring(created.body["uid"].(string)), "(the rows were read)")
		g.Expect(stored).NotTo(ContainSubstring(token), "no registry row nor audit record holds the credential")
	})
}
