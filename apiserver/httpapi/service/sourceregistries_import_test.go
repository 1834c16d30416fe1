package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/apiserver/packs"
	"platform.dev/platform/apiserver/sourceregistries"
	"platform.dev/platform/internal/config"
	"platform.dev/platform/internal/registry"
	testregistry "platform.dev/platform/test/registry"
)

// registryEnv is the service API (Development mode: the caller is a Platform administrator and
// Owner of the default workspace) with the registry cache, the guarded registry client trusting
// a test registry over HTTPS on loopback, the Pack store and the InstalledPack controller.
type registryEnv struct {
	t        *testing.T
	server   *httptest.Server
	registry *testregistry.Server
}

func newRegistryEnv(t *testing.T, archives ...[]byte) *registryEnv {
	t.Helper()
	reg := testregistry.Start(t, archives...)
	pool, err := registry.NewPool(reg.Transport())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := storeFor(t)
	store := &packs.Store{DB: db}
	api, err := service.New(httpapi.Options{
		Config: config.FromMap(config.Testing, map[string]string{"Platform:Authentication:Mode": "Development"}),
		Kube:   kube, PlatformKube: platformKube, Packs: store,
		Registries: &sourceregistries.Store{DB: db}, RegistryFetchers: sourceregistries.Fetchers(pool), RegistryErrorCode: sourceregistries.ErrorCode,
		Ready: func(ctx context.Context) error { return env.Server().Ready(ctx) },
	})
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(api.Handler())
	t.Cleanup(server.Close)
	runPackController(t, store, nil)
	return &registryEnv{t: t, server: server, registry: reg}
}

func (e *registryEnv) do(method, path, body string, headers ...string) response {
	e.t.Helper()
	return call(e.t, e.server, method, path, body, headers...)
}

// register registers the test registry under a unique name with trustPolicy (extra properties
// appended) and refreshes it once; it answers the name.
func (e *registryEnv) register(prefix, trustPolicy, extra string) string {
	e.t.Helper()
	g := NewWithT(e.t)
	name := strings.ToLower(uniqueWorkspace(prefix))
	body := `{"name":"` + name + `","properties":{"indexUrl":"` + e.registry.IndexURL() + `","trustPolicy":"` + trustPolicy +
		`","endpointPolicy":{"allowPrivateNetwork":true}` + extra + `}}`
	created := e.do(http.MethodPost, "/api/sourceregistries", body)
	g.ExpectWithOffset(1, created.status).To(Equal(http.StatusCreated), "%v", created.body)
	e.refresh(name)
	return name
}

func (e *registryEnv) refresh(name string) {
	e.t.Helper()
	r := e.do(http.MethodPost, "/api/sourceregistries/"+name+"/refresh", "")
	NewWithT(e.t).ExpectWithOffset(2, r.body).To(HaveKeyWithValue("outcome", BeElementOf("succeeded", "recovered")), "%v", r.body)
}

// selection is the import body of the one observation registration name lists of publisher's
// Source kit.
func (e *registryEnv) selection(name, publisher string) map[string]any {
	e.t.Helper()
	g := NewWithT(e.t)
	r := e.do(http.MethodGet, "/api/sourceregistries/discovery?registry="+name+"&publisher="+publisher, "")
	g.ExpectWithOffset(1, r.status).To(Equal(http.StatusOK), "%v", r.body)
	var kits []map[string]any
	items, _ := r.body["items"].([]any)
	for _, item := range items {
		if o := item.(map[string]any); o["sourceName"] == "kit" {
			kits = append(kits, o)
		}
	}
	g.ExpectWithOffset(1, kits).To(HaveLen(1), "%v", r.body)
	o := kits[0]
	return map[string]any{"registrationUid": o["registrationUid"], "observationId": o["observationId"], "catalogName": o["catalogName"],
		"publisher": o["publisher"], "sourceName": o["sourceName"], "version": o["version"]}
}

func importBody(sel map[string]any, change ...string) string {
	s := map[string]any{}
	for k, v := range sel {
		s[k] = v
	}
	for i := 0; i+1 < len(change); i += 2 {
		s[change[i]] = change[i+1]
	}
	return mustJSON(map[string]any{"selection": s})
}

func (e *registryEnv) importVersion(body string) response {
	e.t.Helper()
	return e.do(http.MethodPost, "/api/sourceregistries/discovery/imports", body)
}

func TestAnImportFetchesOnlyTheSelectedManifestAndIsIdempotent(t *testing.T) {
	g := NewWithT(t)
	e := newRegistryEnv(t, testregistry.MustArchive(t, "idem", "kit", "1.0.0"), testregistry.MustArchive(t, "idem", "other", "2.0.0"),
		testregistry.MustArchive(t, "elsewhere", "kit", "1.0.0"))
	name := e.register("imp", "trusted", "")
	sel := e.selection(name, "idem")
	index, shard := e.registry.Requests(testregistry.IndexPath), e.registry.Requests(testregistry.ShardPath("idem"))

	first := e.importVersion(importBody(sel))
	g.Expect(first.status).To(Equal(http.StatusCreated), "%v", first.body)
	g.Expect(first.body).To(And(HaveKeyWithValue("created", true), HaveKeyWithValue("publisher", "idem"), HaveKeyWithValue("sourceName", "kit"),
		HaveKeyWithValue("version", "1.0.0"), HaveKeyWithValue("registrationName", name), HaveKeyWithValue("observationId", sel["observationId"]),
		HaveKeyWithValue("scopeRef", "/instance"), HaveKeyWithValue("manifestDigest", HavePrefix("sha256:")), HaveKeyWithValue("archiveDigest", HavePrefix("sha256:")),
		HaveKeyWithValue("indexDigest", HavePrefix("sha256:")), HaveKeyWithValue("catalogDigest", HavePrefix("sha256:")),
		HaveKeyWithValue("trustPolicy", "trusted"), HaveKeyWithValue("origin", "private")))
	g.Expect(first.body["trust"]).To(And(HaveKeyWithValue("verificationStatus", "Verified"), HaveKeyWithValue("snapshotVerification", "NotEvaluated")),
		"the trust snapshot is taken at the import")
	g.Expect(first.raw).NotTo(ContainSubstring(e.registry.URL()), "no URL of the registry in the answer")

	g.Expect(e.registry.Requests(testregistry.ManifestPath("idem", "kit", "1.0.0"))).To(Equal(1), "the selected manifest is fetched")
	g.Expect(e.registry.Requests(testregistry.ManifestPath("idem", "other", "2.0.0"))).To(BeZero(), "no other manifest")
	g.Expect(e.registry.Requests(testregistry.ManifestPath("elsewhere", "kit", "1.0.0"))).To(BeZero(), "no other manifest")
	g.Expect(e.registry.Requests(testregistry.ArchivePath("idem", "kit", "1.0.0"))).To(BeZero(), "no archive: an import materializes nothing")
	g.Expect(e.registry.Requests(testregistry.IndexPath)).To(Equal(index), "no index request")
	g.Expect(e.registry.Requests(testregistry.ShardPath("idem"))).To(Equal(shard), "no shard request")

	again := e.importVersion(importBody(sel))
	g.Expect(again.status).To(Equal(http.StatusOK), "%v", again.body)
	g.Expect(again.body).To(And(HaveKeyWithValue("created", false), HaveKeyWithValue("name", first.body["name"])), "the same selection is the same imported version")
	g.Expect(e.registry.Requests(testregistry.ManifestPath("idem", "kit", "1.0.0"))).To(Equal(1), "an import found is not fetched again")

	elsewhere := e.importVersion(mustJSON(map[string]any{"selection": sel, "scopeRef": "/workspaces/" + httpapi.DevelopmentWorkspace}))
	g.Expect(elsewhere.status).To(Equal(http.StatusCreated), "another scope keeps its own imported version: %v", elsewhere.body)
	g.Expect(elsewhere.body["name"]).NotTo(Equal(first.body["name"]))
	expectProblem(g, e.importVersion(mustJSON(map[string]any{"selection": sel, "scopeRef": "/galaxies/far"})), http.StatusUnprocessableEntity)

	read := e.do(http.MethodGet, "/api/sourceregistries/discovery/imports/"+first.body["name"].(string), "")
	g.Expect(read.status).To(Equal(http.StatusOK), "%v", read.body)
	g.Expect(read.body).To(And(HaveKeyWithValue("name", first.body["name"]), HaveKeyWithValue("created", false)))
	list := e.do(http.MethodGet, "/api/sourceregistries/discovery/imports?publisher=idem&take=10", "")
	g.Expect(list.status).To(Equal(http.StatusOK), "%v", list.body)
	g.Expect(list.body).To(HaveKeyWithValue("total", BeNumerically("==", 2)))
	g.Expect(list.body["items"]).To(ContainElement(HaveKeyWithValue("name", first.body["name"])))
	missing := e.do(http.MethodGet, "/api/sourceregistries/discovery/imports/0190a5b4-0000-7000-8000-000000000000", "")
	expectProblem(g, missing, http.StatusNotFound)
	g.Expect(missing.body).To(HaveKeyWithValue("code", "RegistryImportNotFound"))
}

func TestAnImportIsRefusedWithAStableCodeForEachRuleItBreaks(t *testing.T) {
	g := NewWithT(t)
	e := newRegistryEnv(t, testregistry.MustArchive(t, "fine", "kit", "1.0.0"), testregistry.MustArchive(t, "revoked", "kit", "1.0.0"),
		testregistry.MustArchive(t, "conflict", "kit", "1.0.0"), testregistry.MustArchive(t, "tampered", "kit", "1.0.0"))
	g.Expect(e.registry.Revoke("revoked")).To(Succeed())
	tampered := testregistry.ManifestPath("tampered", "kit", "1.0.0")
	e.registry.Override(tampered, append(e.registry.Document(tampered), ' '))

	trusted := e.register("ref", "trusted", "")
	untrusted := e.register("ref", "untrusted", "")
	disabled := e.register("ref", "trusted", "")
	evicting := e.register("ref", "trusted", `,"cachePolicy":{"retainedObservations":1}`)

	fine := e.selection(trusted, "fine")
	untrustedSel := e.selection(untrusted, "fine")
	disabledSel := e.selection(disabled, "fine")
	evictedSel := e.selection(evicting, "fine")
	revokedSel := e.selection(trusted, "revoked")
	tamperedSel := e.selection(trusted, "tampered")

	read := e.do(http.MethodGet, "/api/sourceregistries/"+disabled, "")
	off := `{"name":"` + disabled + `","properties":{"indexUrl":"` + e.registry.IndexURL() + `","enabled":false,"trustPolicy":"trusted","endpointPolicy":{"allowPrivateNetwork":true}}}`
	g.Expect(e.do(http.MethodPut, "/api/sourceregistries/"+disabled, off, "If-Match", read.header.Get("ETag")).status).To(Equal(http.StatusOK))

	// A change of the conflict version's digest, seen by a later refresh (the first digest seen
	// stays recorded); the evicting registration keeps only that later observation.
	firstConflict := e.selection(trusted, "conflict")
	g.Expect(e.registry.ChangeDigest("conflict", "kit", "1.0.0")).To(Succeed())
	e.refresh(trusted)
	e.refresh(evicting)
	conflicting := e.selection(trusted, "conflict")
	g.Expect(conflicting["observationId"]).NotTo(Equal(firstConflict["observationId"]))

	for name, tc := range map[string]struct {
		body   string
		status int
		code   string
	}{
		"a registration that does not exist":                    {importBody(fine, "registrationUid", "0190a5b4-0000-7000-8000-000000000001"), http.StatusNotFound, "RegistryRegistrationNotFound"},
		"a disabled registration":                               {importBody(disabledSel), http.StatusConflict, "RegistryRegistrationDisabled"},
		"an untrusted registration":                             {importBody(untrustedSel), http.StatusConflict, "RegistryRegistrationUntrusted"},
		"a missing observation":                                 {importBody(fine, "observationId", "0190a5b4-0000-7000-8000-000000000002"), http.StatusNotFound, "RegistryObservationNotFound"},
		"another registration's observation":                    {importBody(fine, "observationId", evictedSel["observationId"].(string)), http.StatusNotFound, "RegistryObservationNotFound"},
		"an evicted observation":                                {importBody(evictedSel), http.StatusGone, "RegistryObservationEvicted"},
		"a version the catalog does not list":                   {importBody(fine, "version", "9.9.9"), http.StatusNotFound, "RegistrySelectionNotListed"},
		"a catalog the observation lacks":                       {importBody(fine, "catalogName", "nowhere"), http.StatusNotFound, "RegistrySelectionNotListed"},
		"a revoked publisher":                                   {importBody(revokedSel), http.StatusConflict, "RegistryPublisherRevoked"},
		"a digest conflict":                                     {importBody(conflicting), http.StatusConflict, "RegistryDigestConflict"},
		"a digest conflict with the first observation too":      {importBody(firstConflict), http.StatusConflict, "RegistryDigestConflict"},
		"a manifest whose bytes differ from the shard's digest": {importBody(tamperedSel), http.StatusConflict, "RegistryDigestMismatch"},
		"a selection that is no uuid":                           {importBody(fine, "observationId", "not-a-uuid"), http.StatusUnprocessableEntity, ""},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := e.importVersion(tc.body)
			expectProblem(g, r, tc.status)
			if tc.code != "" {
				g.Expect(r.body).To(HaveKeyWithValue("code", tc.code))
			}
			g.Expect(r.raw).NotTo(ContainSubstring("\"kind\":\"Manifest\""), "no document in a refusal")
		})
	}
	list := e.do(http.MethodGet, "/api/sourceregistries/discovery/imports?take=100", "")
	g.Expect(list.body).To(HaveKeyWithValue("total", BeNumerically("==", 0)), "nothing refused was imported")
	g.Expect(e.importVersion(importBody(fine)).status).To(Equal(http.StatusCreated), "the registration's other versions import")
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestAPackIsPreviewedAndInstalledFromAnImportedSourceVersionAndRecordsItsProvenance(t *testing.T) {
	g := NewWithT(t)
	e := newRegistryEnv(t, testregistry.MustArchive(t, "regkit", "kit", "1.0.0"), testregistry.MustArchive(t, "regbad", "kit", "1.0.0"))
	name := e.register("inst", "trusted", "")
	imported := e.importVersion(importBody(e.selection(name, "regkit")))
	g.Expect(imported.status).To(Equal(http.StatusCreated), "%v", imported.body)
	id := imported.body["name"].(string)
	t.Cleanup(func() { e.do(http.MethodDelete, "/api/packs/regkit/kit", "") })
	archive := testregistry.ArchivePath("regkit", "kit", "1.0.0")

	// The Console's body: the id and the Source it names.
	body := mustJSON(map[string]any{"source": map[string]any{"sourceVersion": id, "publisher": "regkit", "sourceName": "kit", "version": "1.0.0"}})
	preview := e.do(http.MethodPost, "/api/packs/preview", body)
	g.Expect(preview.status).To(Equal(http.StatusOK), "%v", preview.body)
	g.Expect(field(preview.body, "pack", "name")).To(Equal("kit"))
	g.Expect(field(preview.body, "pack", "digest")).To(Equal(imported.body["archiveDigest"]))
	g.Expect(field(preview.body, "source", "kind")).To(Equal("Registry"))
	g.Expect(field(preview.body, "changeSet", "changes")).To(HaveLen(1))
	g.Expect(e.registry.Requests(archive)).To(Equal(1), "the archive is fetched from the registry")
	g.Expect(e.do(http.MethodGet, "/api/packs/regkit/kit", "").status).To(Equal(http.StatusNotFound), "preview installs nothing")

	installed := e.do(http.MethodPost, "/api/packs", body)
	g.Expect(installed.status).To(Equal(http.StatusCreated), "%v", installed.body)
	g.Expect(installed.body).To(HaveKeyWithValue("state", "installed"))
	provenance := And(HaveKeyWithValue("kind", "Registry"), HaveKeyWithValue("registry", name), HaveKeyWithValue("registrationUid", imported.body["registrationUid"]),
		HaveKeyWithValue("observationId", imported.body["observationId"]), HaveKeyWithValue("sourceVersion", id),
		HaveKeyWithValue("manifestDigest", imported.body["manifestDigest"]), HaveKeyWithValue("digest", imported.body["archiveDigest"]))
	g.Expect(installed.body["source"]).To(provenance)
	read := e.do(http.MethodGet, "/api/packs/regkit/kit", "")
	g.Expect(read.status).To(Equal(http.StatusOK), "%v", read.body)
	g.Expect(read.body["source"]).To(provenance, "the installed Pack shows where it came from")

	// By publisher, Source and version when exactly one imported version has them.
	byIdentity := e.do(http.MethodPost, "/api/packs/preview", `{"source":{"publisher":"regkit","sourceName":"kit","version":"1.0.0"}}`)
	g.Expect(byIdentity.status).To(Equal(http.StatusOK), "%v", byIdentity.body)

	// An archive that differs from the manifest's digest installs nothing.
	bad := e.importVersion(importBody(e.selection(name, "regbad")))
	g.Expect(bad.status).To(Equal(http.StatusCreated), "%v", bad.body)
	e.registry.Override(testregistry.ArchivePath("regbad", "kit", "1.0.0"), testregistry.MustArchive(t, "regbad", "kit", "1.0.1"))
	badBody := mustJSON(map[string]any{"source": map[string]any{"sourceVersion": bad.body["name"]}})
	for _, path := range []string{"/api/packs/preview", "/api/packs"} {
		r := e.do(http.MethodPost, path, badBody)
		expectProblem(g, r, http.StatusConflict)
		g.Expect(r.body).To(HaveKeyWithValue("code", "RegistryDigestMismatch"), path)
	}
	g.Expect(e.do(http.MethodGet, "/api/packs/regbad/kit", "").status).To(Equal(http.StatusNotFound), "nothing is installed")

	for name, tc := range map[string]struct {
		body   string
		status int
		code   string
	}{
		"an unknown imported version":     {`{"source":{"sourceVersion":"0190a5b4-0000-7000-8000-000000000003"}}`, http.StatusNotFound, "RegistryImportNotFound"},
		"a Source the id does not have":   {mustJSON(map[string]any{"source": map[string]any{"sourceVersion": id, "sourceName": "other"}}), http.StatusUnprocessableEntity, ""},
		"no imported version of a Source": {`{"source":{"publisher":"regkit","sourceName":"kit","version":"9"}}`, http.StatusNotFound, "RegistryImportNotFound"},
		"neither id nor Source":           {`{"source":{}}`, http.StatusUnprocessableEntity, ""},
		"a body that is not a source":     {`{"url":"https://elsewhere.example/p.zip"}`, http.StatusBadRequest, ""},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := e.do(http.MethodPost, "/api/packs/preview", tc.body)
			expectProblem(g, r, tc.status)
			if tc.code != "" {
				g.Expect(r.body).To(HaveKeyWithValue("code", tc.code))
			}
		})
	}

	// Trust is evaluated again at install: a revocation accepted since refuses it.
	g.Expect(e.registry.Revoke("regkit")).To(Succeed())
	e.refresh(name)
	revoked := e.do(http.MethodPost, "/api/packs/preview", body)
	expectProblem(g, revoked, http.StatusConflict)
	g.Expect(revoked.body).To(HaveKeyWithValue("code", "RegistryPublisherRevoked"))
}

// A registry may list one Pack and serve another, with digests that match what it serves: an
// archive whose pack.yaml names another publisher, Pack or version than the imported Source
// version is refused (409 RegistryArchiveMismatch) and installs nothing.
func TestAnArchiveThatIsAnotherPackThanItsImportedSourceVersionIsRefused(t *testing.T) {
	e := newRegistryEnv(t)
	for name, served := range map[string]func(publisher string) []byte{
		"another publisher": func(string) []byte { return testregistry.MustArchive(t, "elsewhere", "kit", "1.0.0") },
		"another Pack":      func(p string) []byte { return testregistry.MustArchive(t, p, "other", "1.0.0") },
		"another version":   func(p string) []byte { return testregistry.MustArchive(t, p, "kit", "2.0.0") },
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			publisher := strings.ToLower(uniqueWorkspace("mis"))
			g.Expect(e.registry.AddArchiveAs(publisher, "kit", "1.0.0", served(publisher))).To(Succeed())
			registration := e.register("mis", "trusted", "")
			imported := e.importVersion(importBody(e.selection(registration, publisher)))
			g.Expect(imported.status).To(Equal(http.StatusCreated), "%v", imported.body)
			body := mustJSON(map[string]any{"source": map[string]any{"sourceVersion": imported.body["name"]}})
			for _, path := range []string{"/api/packs/preview", "/api/packs"} {
				r := e.do(http.MethodPost, path, body)
				expectProblem(g, r, http.StatusConflict)
				g.Expect(r.body).To(HaveKeyWithValue("code", "RegistryArchiveMismatch"), path)
			}
			list := e.do(http.MethodGet, "/api/packs", "")
			g.Expect(list.status).To(Equal(http.StatusOK), "%v", list.body)
			g.Expect(mustJSON(list.body)).NotTo(ContainSubstring(publisher), "nothing is installed")
		})
	}
}
