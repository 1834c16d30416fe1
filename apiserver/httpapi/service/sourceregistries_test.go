package service_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/sourceregistries"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/internal/config"
)

// registrationBody is a registration of a private registry; the kube API is shared by the
// tests, so names are unique.
func registrationBody(name, trustPolicy string) string {
	return `{"name":"` + name + `","properties":{"displayName":"Registry ` + name + `","indexUrl":"https://registry.example/index.json",` +
		`"trustPolicy":"` + trustPolicy + `","endpointPolicy":{"allowPrivateNetwork":true}}}`
}

func TestSourceRegistryRegistrationsAreWrittenWithETagsAndTheirTrustPolicyChangesAreAudited(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		as := func(method, path, body string, headers ...string) response {
			return e.do(e.adminCookie, method, path, body, headers...)
		}
		name := strings.ToLower(uniqueWorkspace("reg"))
		created := as(http.MethodPost, "/api/sourceregistries", registrationBody(name, "untrusted"))
		g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
		etag := created.header.Get("ETag")
		g.Expect(etag).NotTo(BeEmpty())
		g.Expect(created.body).To(HaveKeyWithValue("uid", Not(BeEmpty())))
		g.Expect(created.body["status"]).To(HaveKeyWithValue("freshness", "never"), "a registration is not fetched before its first refresh")

		read := as(http.MethodGet, "/api/sourceregistries/"+name, "")
		g.Expect(read.status).To(Equal(http.StatusOK))
		g.Expect(read.body["properties"]).To(HaveKeyWithValue("indexUrl", "https://registry.example/index.json"))
		list := as(http.MethodGet, "/api/sourceregistries", "")
		g.Expect(list.body["items"]).To(ContainElement(HaveKeyWithValue("name", name)))

		expectProblem(g, as(http.MethodPut, "/api/sourceregistries/"+name, registrationBody(name, "trusted")), http.StatusPreconditionRequired)
		expectProblem(g, as(http.MethodPut, "/api/sourceregistries/"+name, registrationBody(name, "trusted"), "If-Match", `"1"`), http.StatusPreconditionFailed)
		replaced := as(http.MethodPut, "/api/sourceregistries/"+name, registrationBody(name, "trusted"), "If-Match", etag)
		g.Expect(replaced.status).To(Equal(http.StatusOK), "%v", replaced.body)
		g.Expect(replaced.body["properties"]).To(HaveKeyWithValue("trustPolicy", "trusted"))

		audit := as(http.MethodGet, "/api/identity/audit-events?limit=5", "")
		g.Expect(audit.body["items"]).To(ContainElement(And(
			HaveKeyWithValue("action", "source-registry.trust-policy-changed"),
			HaveKeyWithValue("targetId", created.body["uid"]),
			HaveKeyWithValue("reasonCode", "trusted"),
			HaveKeyWithValue("actorId", e.admin.ID),
		)), "the trust policy change is audited, by whom and for which registration")

		expectProblem(g, as(http.MethodPut, "/api/sourceregistries/"+name, registrationBody("other", "trusted"), "If-Match", replaced.header.Get("ETag")), http.StatusUnprocessableEntity)
		expectProblem(g, as(http.MethodDelete, "/api/sourceregistries/"+name, ""), http.StatusPreconditionRequired)
		g.Expect(as(http.MethodDelete, "/api/sourceregistries/"+name, "", "If-Match", replaced.header.Get("ETag")).status).To(Equal(http.StatusNoContent))
		expectProblem(g, as(http.MethodGet, "/api/sourceregistries/"+name, ""), http.StatusNotFound)
	})
}

func TestABadSourceRegistryRegistrationIsRefusedWithProblemDetailsNamingTheRequestsField(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		e := newIdentityEnv(t, db)
		for name, tc := range map[string]struct{ body, location string }{
			"an http index without allowHttp": {`{"name":"bad-http","properties":{"indexUrl":"http://registry.example/index.json"}}`, "body.properties.indexUrl"},
			"an index URL with credentials":   {`{"name":"bad-creds","properties":{"indexUrl":"https://user:pw@registry.example/index.json"}}`, "body.properties.indexUrl"},
			"an index URL with a query":       {`{"name":"bad-query","properties":{"indexUrl":"https://registry.example/index.json?x=1"}}`, "body.properties.indexUrl"},
			"an unknown trust policy":         {`{"name":"bad-policy","properties":{"indexUrl":"https://registry.example/i.json","trustPolicy":"blind"}}`, "body.properties.trustPolicy"},
			"staticBearer without credential": {`{"name":"bad-bearer","properties":{"indexUrl":"https://registry.example/i.json","authenticationMode":"staticBearer"}}`, "body.properties.credential"},
			"a name that is no DNS label":     {`{"name":"Bad_Name","properties":{"indexUrl":"https://registry.example/i.json"}}`, "body.name"},
		} {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				r := e.do(e.adminCookie, http.MethodPost, "/api/sourceregistries", tc.body)
				expectProblem(g, r, http.StatusUnprocessableEntity)
				// The request has name and properties; the kind's definition is not a field of it.
				g.Expect(r.body["errors"]).To(ContainElement(HaveKeyWithValue("location", tc.location)), "%v", r.body)
				g.Expect(r.body["errors"]).To(HaveEach(HaveKeyWithValue("location", Or(Equal("body.name"), HavePrefix("body.properties")))), "%v", r.body)
				g.Expect(r.body["detail"]).NotTo(ContainSubstring("SourceRegistry "), "%v", r.body)
			})
		}
	})
}

func TestARegistrationNameThatIsTakenIsRefusedInWords(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		name := strings.ToLower(uniqueWorkspace("taken"))
		g.Expect(e.do(e.adminCookie, http.MethodPost, "/api/sourceregistries", registrationBody(name, "untrusted")).status).To(Equal(http.StatusCreated))
		again := e.do(e.adminCookie, http.MethodPost, "/api/sourceregistries", registrationBody(name, "trusted"))
		expectProblem(g, again, http.StatusConflict)
		g.Expect(again.body["detail"]).To(Equal(`a Source registry registration named "` + name + `" already exists`))
	})
}

func TestTheOfficialSourceRegistryIsCreatedOnlyWhenAbsentAndCannotBeDeleted(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		ctx := context.Background()
		cfg := config.FromMap(config.Production, nil)
		g.Expect(sourceregistries.EnsureOfficial(ctx, kube, cfg)).To(Succeed())
		as := func(method, path, body string, headers ...string) response {
			return e.do(e.adminCookie, method, path, body, headers...)
		}
		official := as(http.MethodGet, "/api/sourceregistries/"+sourceregistries.OfficialName, "")
		g.Expect(official.status).To(Equal(http.StatusOK), "%v", official.body)
		g.Expect(official.body["status"]).To(HaveKeyWithValue("official", true))

		// An administrator reconfigures it; starting again keeps what they wrote.
		body := `{"name":"` + sourceregistries.OfficialName + `","properties":{"indexUrl":"https://mirror.example/index.json","enabled":false,"trustPolicy":"authoritative"}}`
		reconfigured := as(http.MethodPut, "/api/sourceregistries/"+sourceregistries.OfficialName, body, "If-Match", official.header.Get("ETag"))
		g.Expect(reconfigured.status).To(Equal(http.StatusOK), "%v", reconfigured.body)
		g.Expect(sourceregistries.EnsureOfficial(ctx, kube, cfg)).To(Succeed())
		again := as(http.MethodGet, "/api/sourceregistries/"+sourceregistries.OfficialName, "")
		g.Expect(again.body["properties"]).To(HaveKeyWithValue("indexUrl", "https://mirror.example/index.json"))

		refused := as(http.MethodDelete, "/api/sourceregistries/"+sourceregistries.OfficialName, "", "If-Match", again.header.Get("ETag"))
		expectProblem(g, refused, http.StatusConflict)
		g.Expect(refused.body["detail"]).To(ContainSubstring("cannot be deleted"))
		g.Expect(as(http.MethodGet, "/api/sourceregistries/"+sourceregistries.OfficialName, "").status).To(Equal(http.StatusOK))
	})
}

func TestARegistrationsRefreshHistoryIsListedNewestFirstAndItsTrustIsComputedAtTheRead(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		as := func(method, path string) response { return e.do(e.adminCookie, method, path, "") }
		name := strings.ToLower(uniqueWorkspace("hist"))
		created := e.do(e.adminCookie, http.MethodPost, "/api/sourceregistries", registrationBody(name, "trusted"))
		g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
		uid := created.body["uid"].(string)

		history := &sourceregistries.Store{DB: db}
		start := time.Now().UTC()
		for i, outcome := range []string{sourceregistries.OutcomeFailed, sourceregistries.OutcomeRecovered} {
			_, err := history.AppendRefresh(context.Background(), sourceregistries.RefreshRecord{
				RegistrationUID: uid, Trigger: sourceregistries.TriggerManual, Outcome: outcome, StartedAt: start.Add(time.Duration(i) * time.Minute),
				FinishedAt: start.Add(time.Duration(i)*time.Minute + 1500*time.Millisecond), RetryCount: i, CorrelationID: "corr-" + outcome, ErrorCode: map[bool]string{true: "RegistryTimeout"}[i == 0],
			})
			g.Expect(err).NotTo(HaveOccurred())
		}
		page := as(http.MethodGet, "/api/sourceregistries/"+name+"/refreshes?take=10")
		g.Expect(page.status).To(Equal(http.StatusOK), "%v", page.body)
		g.Expect(page.body["items"]).To(HaveExactElements(
			And(HaveKeyWithValue("outcome", "recovered"), HaveKeyWithValue("durationMs", BeNumerically("==", 1500)), HaveKeyWithValue("registrationName", name)),
			And(HaveKeyWithValue("outcome", "failed"), HaveKeyWithValue("errorCode", "RegistryTimeout")),
		))
		expectProblem(g, as(http.MethodGet, "/api/sourceregistries/"+name+"/refreshes?take=101"), http.StatusUnprocessableEntity)
		expectProblem(g, as(http.MethodGet, "/api/sourceregistries/no-such-registry/refreshes"), http.StatusNotFound)

		trust := as(http.MethodGet, "/api/sourceregistries/"+name+"/trust")
		g.Expect(trust.status).To(Equal(http.StatusOK), "%v", trust.body)
		g.Expect(trust.body).To(And(HaveKeyWithValue("origin", "internal"), HaveKeyWithValue("trustPolicy", "trusted"), HaveKeyWithValue("registrationUid", uid)))
		g.Expect(trust.body).NotTo(HaveKey("indexUrl"), "evidence carries no URL, credential or document")
	})
}

func TestARegistrationCannotTakeTheNameOfAnotherRoute(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		e := newIdentityEnv(t, db)
		for _, name := range []string{"discovery", "trust"} {
			expectProblem(NewWithT(t), e.do(e.adminCookie, http.MethodPost, "/api/sourceregistries", registrationBody(name, "untrusted")), http.StatusUnprocessableEntity)
		}
	})
}

// fakeRegistry is an in-process registry index for the service tests: the refresh logic itself
// is tested in apiserver/sourceregistries; these check the route and the kind's status.
type fakeRegistry struct {
	serial int64
	fail   error
	// shard is the one shard's document; no Sources when empty.
	shard string
}

var fakeRegistries sync.Map // index URL -> *fakeRegistry

func fakeRegistryFetchers(ctx context.Context, reg *platformv1.SourceRegistry) (sourceregistries.Fetcher, error) {
	if real, ok := realRegistries.Load(reg.Definition.IndexURL); ok {
		return real.(func(context.Context, *platformv1.SourceRegistry) (sourceregistries.Fetcher, error))(ctx, reg)
	}
	f, ok := fakeRegistries.Load(reg.Definition.IndexURL)
	if !ok {
		return nil, errors.New("no fake registry at " + reg.Definition.IndexURL)
	}
	return f.(*fakeRegistry), nil
}

func (f *fakeRegistry) FetchIndex(_ context.Context, etag, _ string) (*sourceregistries.IndexFetch, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	tag := fmt.Sprintf(`"%d"`, f.serial)
	if etag == tag {
		return &sourceregistries.IndexFetch{NotModified: true}, nil
	}
	return &sourceregistries.IndexFetch{ETag: tag, Serial: f.serial, Digest: fmt.Sprintf("sha256:%064d", f.serial), Document: []byte(`{}`),
		Shards: []sourceregistries.ShardRef{{Name: "main", Digest: "sha256:shard"}}}, nil
}

func (f *fakeRegistry) FetchShard(context.Context, sourceregistries.ShardRef) (*sourceregistries.FetchedShard, error) {
	doc := f.shard
	if doc == "" {
		doc = `{"sources":[]}`
	}
	l, err := sourceregistries.ListingsOf([]byte(doc))
	return &sourceregistries.FetchedShard{Document: []byte(doc), Listings: l}, err
}

func TestAManualRefreshIsRecordedInTheHistoryAndOnTheRegistrationsStatus(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		name := strings.ToLower(uniqueWorkspace("refr"))
		url := "https://" + name + ".example/index.json"
		body := strings.Replace(registrationBody(name, "untrusted"), "https://registry.example/index.json", url, 1)
		g.Expect(e.do(e.adminCookie, http.MethodPost, "/api/sourceregistries", body).status).To(Equal(http.StatusCreated))
		reg := &fakeRegistry{serial: 3}
		fakeRegistries.Store(url, reg)
		refresh := func() response {
			return e.do(e.adminCookie, http.MethodPost, "/api/sourceregistries/"+name+"/refresh", "")
		}

		first := refresh()
		g.Expect(first.status).To(Equal(http.StatusOK), "%v", first.body)
		g.Expect(first.body).To(And(HaveKeyWithValue("outcome", "succeeded"), HaveKeyWithValue("trigger", "manual"), HaveKeyWithValue("correlationId", Not(BeEmpty()))))
		g.Expect(refresh().body).To(HaveKeyWithValue("outcome", "notModified"))
		reg.fail = errors.New("unreachable")
		g.Expect(refresh().body).To(And(HaveKeyWithValue("outcome", "failed"), HaveKeyWithValue("errorCode", "RegistryUnavailable")))

		read := e.do(e.adminCookie, http.MethodGet, "/api/sourceregistries/"+name, "")
		status := read.body["status"].(map[string]any)
		g.Expect(status).To(And(
			HaveKeyWithValue("consecutiveFailures", BeNumerically("==", 1)),
			HaveKeyWithValue("currentObservationId", first.body["observationId"]),
			HaveKeyWithValue("freshness", "fresh"),
			HaveKeyWithValue("lastRefresh", HaveKeyWithValue("outcome", "failed")),
		), "the last-known-good observation stays current after a failure")
		reg.fail = nil
		g.Expect(refresh().body).To(HaveKeyWithValue("outcome", "recovered"))
		g.Expect(e.do(e.adminCookie, http.MethodGet, "/api/sourceregistries/"+name+"/refreshes", "").body["items"]).To(HaveLen(4))
	})
}

// shardOf lists one Source version of publisher, asserting status, with manifest digest digit.
func shardOf(publisher, status, source, version, digit string) string {
	return `{"name":"main","publishers":[{"name":"` + publisher + `","status":"` + status + `"}],"sources":[{"publisher":"` + publisher +
		`","name":"` + source + `","displayName":"Kit of ` + publisher + `","versions":[{"version":"` + version + `","manifest":"m.json","manifestDigest":"sha256:` +
		strings.Repeat(digit, 64) + `","compatibility":{"packApiVersions":["platform/v1"]},"isCatalogLatest":true}]}]}`
}

func TestDiscoveryReadsOnlyTheCacheFiltersAndShowsDifferingDigestsAsAConflict(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		publisher := strings.ToLower(uniqueWorkspace("pub"))
		var names []string
		for i, tc := range []struct{ policy, status, digit string }{{"untrusted", "Verified", "1"}, {"trusted", "Verified", "2"}} {
			name := fmt.Sprintf("%s-r%d", publisher, i)
			names = append(names, name)
			url := "https://" + name + ".example/index.json"
			fakeRegistries.Store(url, &fakeRegistry{serial: 1, shard: shardOf(publisher, tc.status, "kit", "1.0", tc.digit)})
			body := strings.Replace(registrationBody(name, tc.policy), "https://registry.example/index.json", url, 1)
			g.Expect(e.do(e.adminCookie, http.MethodPost, "/api/sourceregistries", body).status).To(Equal(http.StatusCreated))
			g.Expect(e.do(e.adminCookie, http.MethodPost, "/api/sourceregistries/"+name+"/refresh", "").body).To(HaveKeyWithValue("outcome", "succeeded"))
		}
		discover := func(query string) response {
			return e.do(e.adminCookie, http.MethodGet, "/api/sourceregistries/discovery?publisher="+publisher+query, "")
		}
		all := discover("")
		g.Expect(all.status).To(Equal(http.StatusOK), "%v", all.body)
		g.Expect(all.body["total"]).To(BeNumerically("==", 2))
		g.Expect(all.body["items"]).To(HaveExactElements(
			And(HaveKeyWithValue("registrationName", names[0]), HaveKeyWithValue("publisherStatus", "Declared"), HaveKeyWithValue("assertedPublisherStatus", "Verified"),
				HaveKeyWithValue("conflict", true), HaveKeyWithValue("verificationStatus", "Conflict"), HaveKeyWithValue("isCatalogLatest", true)),
			And(HaveKeyWithValue("registrationName", names[1]), HaveKeyWithValue("publisherStatus", "Verified"), HaveKeyWithValue("conflict", true)),
		), "an untrusted registration contributes declared evidence only; both observations of differing digests stay visible")
		for query, want := range map[string]int{
			"&registry=" + names[1]: 1, "&trustPolicy=trusted": 1, "&publisherStatus=Declared": 1, "&conflictsOnly=true": 2,
			"&compatibleOnly=true": 2, "&freshOnly=true": 2, "&search=KIT+OF": 2, "&search=nothing-like-it": 0, "&take=1": 2, "&skip=1": 2,
		} {
			r := discover(query)
			g.Expect(r.status).To(Equal(http.StatusOK), "%s: %v", query, r.body)
			g.Expect(r.body["total"]).To(BeNumerically("==", want), query)
		}
		g.Expect(discover("&take=1").body["items"]).To(HaveLen(1))
		expectProblem(g, discover("&take=101"), http.StatusUnprocessableEntity)

		publishers := e.do(e.adminCookie, http.MethodGet, "/api/sourceregistries/discovery/publishers?take=100", "")
		g.Expect(publishers.body["items"]).To(ContainElement(And(HaveKeyWithValue("publisher", publisher), HaveKeyWithValue("publisherStatus", "Verified"))))
		detail := e.do(e.adminCookie, http.MethodGet, "/api/sourceregistries/discovery/sources/"+publisher+"/kit", "")
		g.Expect(detail.status).To(Equal(http.StatusOK), "%v", detail.body)
		g.Expect(detail.body["observations"]).To(HaveLen(2))
		expectProblem(g, e.do(e.adminCookie, http.MethodGet, "/api/sourceregistries/discovery/sources/"+publisher+"/none", ""), http.StatusNotFound)

		trust := e.do(e.adminCookie, http.MethodGet, "/api/sourceregistries/trust/sources/"+publisher+"/kit/versions/1.0?manifestDigest=sha256:"+strings.Repeat("2", 64), "")
		g.Expect(trust.status).To(Equal(http.StatusOK), "%v", trust.body)
		g.Expect(trust.body).To(And(HaveKeyWithValue("verificationStatus", "Conflict"), HaveKeyWithValue("publisherStatus", "Verified"),
			HaveKeyWithValue("snapshotVerification", "NotEvaluated"), HaveKeyWithValue("firstSeen", HaveKeyWithValue("manifestDigest", "sha256:"+strings.Repeat("1", 64)))))
		g.Expect(trust.body["evidence"]).To(HaveLen(2))
		g.Expect(fmt.Sprint(trust.body)).NotTo(ContainSubstring(".example/index.json"), "evidence carries no URL or document")
		expectProblem(g, e.do(e.adminCookie, http.MethodGet, "/api/sourceregistries/trust/sources/"+publisher+"/kit/versions/1.0?manifestDigest=md5:x", ""), http.StatusUnprocessableEntity)
	})
}

func TestTrustEvidenceHoldsTheCanonicalIndexAndCatalogDigests(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		name := strings.ToLower(uniqueWorkspace("evid"))
		url := "https://" + name + ".example/index.json"
		fakeRegistries.Store(url, &fakeRegistry{serial: 1, shard: shardOf(name, "Verified", "kit", "1.0", "3")})
		g.Expect(e.do(e.adminCookie, http.MethodPost, "/api/sourceregistries", strings.Replace(registrationBody(name, "trusted"), "https://registry.example/index.json", url, 1)).status).To(Equal(http.StatusCreated))
		refreshed := e.do(e.adminCookie, http.MethodPost, "/api/sourceregistries/"+name+"/refresh", "")
		g.Expect(refreshed.body).To(HaveKeyWithValue("outcome", "succeeded"))
		trust := e.do(e.adminCookie, http.MethodGet, "/api/sourceregistries/trust/sources/"+name+"/kit/versions/1.0?manifestDigest=sha256:"+strings.Repeat("3", 64), "")
		g.Expect(trust.status).To(Equal(http.StatusOK), "%v", trust.body)
		g.Expect(trust.body["evidence"]).To(HaveExactElements(And(
			HaveKeyWithValue("observationId", refreshed.body["observationId"]),
			HaveKeyWithValue("indexDigest", HavePrefix("sha256:")),
			HaveKeyWithValue("catalogName", "main"),
			HaveKeyWithValue("catalogDigest", HavePrefix("sha256:")), // the fake client names it sha256:shard
		)), "the spec's evidence: registration and observation ids, canonical index and catalog digests")
	})
}

func sourceRegistryRows(rows map[string]tableRow) {
	rows["list-source-registries"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(200), get("/api/sourceregistries")}
	rows["get-source-registry"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(404), get("/api/sourceregistries/table-none")}
	rows["create-source-registry"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(422), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/sourceregistries", body: `{"name":"table-bad","properties":{"indexUrl":"http://registry.example/i.json"}}`}
	}}
	rows["replace-source-registry"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(404), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodPut, path: "/api/sourceregistries/table-none", body: registrationBody("table-none", "untrusted"), headers: []string{"If-Match", `"1"`}}
	}}
	rows["list-source-registry-refreshes"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(404), get("/api/sourceregistries/table-none/refreshes")}
	rows["get-source-registry-trust"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(404), get("/api/sourceregistries/table-none/trust")}
	rows["refresh-source-registry"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(404), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/sourceregistries/table-none/refresh"}
	}}
	rows["discover-sources"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(200), get("/api/sourceregistries/discovery?take=5")}
	rows["list-discovered-publishers"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(200), get("/api/sourceregistries/discovery/publishers")}
	rows["get-discovered-source"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(404), get("/api/sourceregistries/discovery/sources/table/none")}
	rows["get-source-version-trust"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(200), get("/api/sourceregistries/trust/sources/table/kit/versions/1?manifestDigest=sha256:" + strings.Repeat("0", 64))}
	rows["import-source-version"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(404), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/sourceregistries/discovery/imports", body: `{"selection":{"registrationUid":"0190a5b4-0000-7000-8000-000000000009",` +
			`"observationId":"0190a5b4-0000-7000-8000-000000000009","catalogName":"table","publisher":"table","sourceName":"kit","version":"1"}}`}
	}}
	rows["list-imported-source-versions"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(200), get("/api/sourceregistries/discovery/imports")}
	rows["get-imported-source-version"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(404), get("/api/sourceregistries/discovery/imports/0190a5b4-0000-7000-8000-000000000009")}
	rows["delete-source-registry"] = tableRow{httpapi.PolicyPlatformAdmin, platformAdminOnly(404), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodDelete, path: "/api/sourceregistries/table-none", headers: []string{"If-Match", `"1"`}}
	}}
}
