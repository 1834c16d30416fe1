package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apis/platform/ownerscope"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/tools/aep"
	"platform.dev/platform/test/extension"
)

// The example extension redeems its capability at the service API's route, anonymously; the
// value comes from the Local Vault through the Resolver, which evaluates the tenant Secret's
// grant for the workspace again at each redemption: a grant revoked after the provider was
// configured refuses the next capability. The value appears in no answer of the platform.
func TestAnExtensionRedeemsItsCapabilityAtTheServiceAPIAndARevokedGrantRefusesTheNext(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		e := newIdentityEnv(t, db)
		const value = "wk-tenant-7f3a9c"
		ext := extension.New(extension.Options{})
		extSrv := httptest.NewServer(ext)
		defer extSrv.Close()
		tenant := "/api/tenants/" + e.ws.TenantID
		tenantRef := string(ownerscope.Of(ownerscope.Tenant, e.ws.TenantID).Ref())
		grant := grantJSON("/workspaces/"+e.ws.ID, false)
		as := func(method, path, body string, headers ...string) response {
			return e.do(e.adminCookie, method, path, body, append(headers, httpapi.WorkspaceHeader, e.ws.RouteName)...)
		}
		g.Expect(as(http.MethodPut, tenant+"/vaults/tenant-vault", vaultBody("tenant-vault", "")).status).To(Equal(http.StatusCreated))
		created := as(http.MethodPut, tenant+"/secrets/weather-key", secretBody("weather-key", "tenant-vault", "", grant))
		g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
		g.Expect(as(http.MethodPut, tenant+"/secrets/weather-key/value", `{"value":"`+value+`"}`).status).To(Equal(http.StatusNoContent))
		definition := fmt.Sprintf(`{"protocol":"Extension","transport":"StreamableHttp","timeoutSeconds":5,"http":{"url":%q},
			"extension":{"secrets":[{"role":"weather-api-key","secret":{"name":"weather-key","scopeRef":%q}}]}}`, extSrv.URL, tenantRef)
		provider := as(http.MethodPost, "/api/toolproviders", toolProviderBody("wx", definition))
		g.Expect(provider.status).To(Equal(http.StatusCreated), "%v", provider.body)
		refreshed := as(http.MethodPost, "/api/toolproviders/wx/tools/refresh", "")
		g.Expect(refreshed.status).To(Equal(http.StatusOK), "%v", refreshed.body)
		g.Expect(refreshed.body).To(HaveKeyWithValue("created", BeNumerically("==", 2)))
		tool := as(http.MethodGet, "/api/tools/wx-lookup-weather", "")
		g.Expect(tool.body["definition"]).NotTo(HaveKey("enabled"), "discovered disabled")
		g.Expect(as(http.MethodPost, "/api/tools/wx-lookup-weather/enable", "", "If-Match", tool.header.Get("ETag")).status).To(Equal(http.StatusOK))

		res, err := e.tools.Call(ctx, e.ws.RouteName, "wx-lookup-weather", json.RawMessage(`{"city":"Tromsø"}`), "k1")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Text).To(Equal(extension.Forecast("Tromsø") + fmt.Sprintf(" (asked the weather service with a key of %d characters)", len(value))))
		g.Expect(ext.Redemptions()).To(Equal([]extension.Redemption{{Status: http.StatusOK, ValueLength: len(value)}}))

		// Redeemed, the capability is spent; an anonymous caller gets Problem Details, no value.
		spent := call(t, e.server, http.MethodPost, aep.RedeemPath, `{"capability":"aepcap_spent","scope":"`+e.ws.RouteName+`"}`)
		expectProblem(g, spent, http.StatusForbidden)

		// The tenant revokes its grant: the next capability is refused at redemption.
		secret := as(http.MethodGet, tenant+"/secrets/weather-key", "")
		revoked := as(http.MethodPut, tenant+"/secrets/weather-key", secretBody("weather-key", "tenant-vault", "", ""), "If-Match", secret.header.Get("ETag"))
		g.Expect(revoked.status).To(Equal(http.StatusOK), "%v", revoked.body)
		res, err = e.tools.Call(ctx, e.ws.RouteName, "wx-lookup-weather", json.RawMessage(`{"city":"Tromsø"}`), "k2")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.IsError).To(BeTrue(), res.Text)
		refused := ext.Redemptions()[1]
		g.Expect(refused.Status).To(Equal(http.StatusForbidden))
		g.Expect(refused.Detail).To(And(ContainSubstring("the capability is refused"), ContainSubstring(`Secret "weather-key"`),
			ContainSubstring("grants no use to")))
		for _, r := range []response{created, provider, refreshed, spent, revoked, as(http.MethodGet, "/api/toolproviders/wx", "")} {
			g.Expect(fmt.Sprint(r.body)).NotTo(ContainSubstring(value))
		}
		g.Expect(res.Text + refused.Detail).NotTo(ContainSubstring(value))
	})
}
