package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/apiserver/packs"
	"platform.dev/platform/apiserver/packs/packstest"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/controllers/installedpack"
	"platform.dev/platform/internal/config"
	"platform.dev/platform/internal/pack"
	"platform.dev/platform/internal/resourcenamespace"
)

// packServer is the service API with the Pack store, and the InstalledPack controller running
// against the same control plane for the length of the test.
func packServer(t *testing.T) (*httptest.Server, *store.Store) {
	t.Helper()
	return packServerWith(t, nil)
}

// packServerWith is packServer with the controller adjusted by tune (its Interactions) before it
// starts.
func packServerWith(t *testing.T, tune func(db *store.Store, r *installedpack.Reconciler)) (*httptest.Server, *store.Store) {
	t.Helper()
	db := storeFor(t)
	archives := &packs.Store{DB: db}
	api, err := service.New(httpapi.Options{
		Config: config.FromMap(config.Testing, map[string]string{"Platform:Authentication:Mode": "Development"}),
		Kube:   kube, PlatformKube: platformKube, Packs: archives,
		Ready: func(ctx context.Context) error { return env.Server().Ready(ctx) },
	})
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(api.Handler())
	t.Cleanup(server.Close)
	runPackController(t, archives, func(r *installedpack.Reconciler) {
		if tune != nil {
			tune(db, r)
		}
	})
	return server, db
}

// runPackController runs the InstalledPack controller against the test's control plane, reading
// archives from the store, for the length of the test; tune, when set, adjusts it before it starts.
func runPackController(t *testing.T, archives *packs.Store, tune func(*installedpack.Reconciler)) {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(env.Platform, ctrl.Options{Scheme: platformscheme.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: ctrlconfig.Controller{SkipNameValidation: &skip}})
	if err != nil {
		t.Fatal(err)
	}
	r := &installedpack.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("installedpack-controller"), Archives: archives}
	if tune != nil {
		tune(r)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// postArchive sends a Pack archive as the Console does.
func postArchive(t *testing.T, server *httptest.Server, path, contentType string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, server.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Pack-File-Name", "../hello.zip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	out := response{status: resp.StatusCode, header: resp.Header, raw: string(data)}
	if len(data) > 0 && strings.Contains(resp.Header.Get("Content-Type"), "json") {
		if err := json.Unmarshal(data, &out.body); err != nil {
			t.Fatalf("%s: body is not JSON: %s", path, data)
		}
	}
	return out
}

func greeterPack(version, instructions string) packstest.Pack {
	return packstest.Pack{Publisher: "acme", Name: "greeting", Version: version, Resources: map[string]string{
		"agents/greeter.yaml": packstest.Agent("greeter", instructions),
		"flows/greet.yaml":    packstest.Flow("greet", "greeter"),
		"entries/hello.yaml":  packstest.Entry("hello", "greeter"),
	}}
}

// resourceVersions are the resourceVersions of everything a Pack install may write in the
// workspace: the InstalledPacks and the objects of the Pack kinds in the Pack's namespace.
func resourceVersions(t *testing.T, ws, id string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ips := &platformv1.InstalledPackList{}
	if err := kube.List(context.Background(), ips, client.InNamespace(ws)); err != nil {
		t.Fatal(err)
	}
	for _, ip := range ips.Items {
		out["InstalledPack/"+ip.Name] = ip.ResourceVersion
	}
	for _, kind := range pack.InstallOrder {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(platformv1.GroupVersion.WithKind(string(kind) + "List"))
		if err := kube.List(context.Background(), list, client.InNamespace(resourcenamespace.KubeName(ws, platformv1.ResourceNamespace(id)))); err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			out[string(kind)+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	return out
}

func TestAPackIsPreviewedWithoutChangeThenInstalledUpdatedRolledBackAndUninstalled(t *testing.T) {
	g := NewWithT(t)
	server, _ := packServer(t)
	v1, v2 := greeterPack("1.0.0", "Say hello."), greeterPack("1.1.0", "Say hello warmly.")
	t.Cleanup(func() { call(t, server, http.MethodDelete, "/api/packs/acme/greeting", "") })

	preview := postArchive(t, server, "/api/packs/preview", "application/zip", v1.Zip())
	g.Expect(preview.status).To(Equal(http.StatusOK), preview.raw)
	g.Expect(field(preview.body, "pack", "fileName")).To(Equal("hello.zip"), "only a display-safe base name is kept")
	g.Expect(field(preview.body, "changeSet", "changes")).To(HaveLen(3))
	g.Expect(resourceVersions(t, "default", "acme.greeting")).To(BeEmpty(), "preview writes nothing")

	installed := postArchive(t, server, "/api/packs", "application/zip", v1.Zip())
	g.Expect(installed.status).To(Equal(http.StatusCreated), installed.raw)
	g.Expect(installed.body).To(HaveKeyWithValue("state", "installed"))
	g.Expect(installed.body).To(HaveKeyWithValue("version", "1.0.0"))
	g.Expect(installed.body).To(HaveKeyWithValue("namespace", "acme.greeting"))
	g.Expect(installed.body["resources"]).To(HaveLen(3))
	g.Expect(installed.body["resources"]).To(HaveEach(HaveKeyWithValue("condition", "managed")))

	before := resourceVersions(t, "default", "acme.greeting")
	updatePreview := postArchive(t, server, "/api/packs/preview", "application/octet-stream", v2.Zip())
	g.Expect(updatePreview.status).To(Equal(http.StatusOK), updatePreview.raw)
	g.Expect(field(updatePreview.body, "changeSet", "fromVersion")).To(Equal("1.0.0"))
	g.Expect(field(updatePreview.body, "changeSet", "changes")).To(ContainElement(And(HaveKeyWithValue("name", "greeter"), HaveKeyWithValue("action", "update"))))
	g.Expect(resourceVersions(t, "default", "acme.greeting")).To(Equal(before), "preview of an update changes no resourceVersion")

	updated := postArchive(t, server, "/api/packs", "application/zip", v2.Zip())
	g.Expect(updated.status).To(Equal(http.StatusOK), updated.raw)
	g.Expect(updated.body).To(HaveKeyWithValue("version", "1.1.0"))
	g.Expect(updated.body).To(HaveKeyWithValue("retainedVersion", "1.0.0"))

	listed := call(t, server, http.MethodGet, "/api/packs", "")
	g.Expect(listed.body["items"]).To(ContainElement(HaveKeyWithValue("name", "greeting")))
	read := call(t, server, http.MethodGet, "/api/packs/acme/greeting", "")
	g.Expect(read.status).To(Equal(http.StatusOK))
	g.Expect(read.header.Get("ETag")).NotTo(BeEmpty())

	rollbackPreview := call(t, server, http.MethodPost, "/api/packs/acme/greeting/rollback/preview", "")
	g.Expect(rollbackPreview.status).To(Equal(http.StatusOK), rollbackPreview.raw)
	g.Expect(field(rollbackPreview.body, "pack", "version")).To(Equal("1.0.0"))
	rolledBack := call(t, server, http.MethodPost, "/api/packs/acme/greeting/rollback", "")
	g.Expect(rolledBack.status).To(Equal(http.StatusOK), rolledBack.raw)
	g.Expect(rolledBack.body).To(HaveKeyWithValue("version", "1.0.0"))
	g.Expect(rolledBack.body).To(HaveKeyWithValue("retainedVersion", "1.1.0"))

	agent := &platformv1.Agent{}
	key := client.ObjectKey{Namespace: resourcenamespace.KubeName("default", "acme.greeting"), Name: "greeter"}
	g.Expect(kube.Get(context.Background(), key, agent)).To(Succeed())
	agent.Definition.Instructions = "Mine now."
	g.Expect(kube.Update(context.Background(), agent)).To(Succeed())
	g.Expect(call(t, server, http.MethodGet, "/api/packs/acme/greeting", "").body["resources"]).To(
		ContainElement(And(HaveKeyWithValue("name", "greeter"), HaveKeyWithValue("condition", "modified"), HaveKeyWithValue("matchesInstalled", false))))
	blocked := postArchive(t, server, "/api/packs", "application/zip", v2.Zip())
	expectProblem(g, blocked, http.StatusConflict)
	g.Expect(blocked.body["changes"]).To(ConsistOf(And(HaveKeyWithValue("name", "greeter"), HaveKeyWithValue("action", "conflict"))))

	uninstallPreview := call(t, server, http.MethodGet, "/api/packs/acme/greeting/uninstall-preview", "")
	g.Expect(uninstallPreview.body["preserve"]).To(ConsistOf(HaveKeyWithValue("name", "greeter")))
	g.Expect(uninstallPreview.body["remove"]).To(HaveLen(2))
	removed := call(t, server, http.MethodDelete, "/api/packs/acme/greeting", "")
	g.Expect(removed.status).To(Equal(http.StatusOK), removed.raw)
	g.Expect(removed.body).To(HaveKeyWithValue("state", "degraded"))
	g.Expect(removed.body["preserved"]).To(ConsistOf(HaveKeyWithValue("reason", "modified since installed")))
	g.Expect(kube.Get(context.Background(), key, agent)).To(Succeed())
	g.Expect(agent.Definition.Instructions).To(Equal("Mine now."))
}

func TestPackArchiveRefusalsAreProblemDetailsWithReasonPathAndField(t *testing.T) {
	server, db := packServer(t)
	traversal := packstest.Pack{Publisher: "acme", Name: "bad", Version: "1.0.0", Resources: map[string]string{"../agents/x.yaml": packstest.Agent("x", "x")}}
	tests := map[string]struct {
		contentType string
		body        []byte
		status      int
		reason      string
		path        string
	}{
		"a body that is not a ZIP is 422 NotZip":        {"application/zip", []byte("not a zip"), http.StatusUnprocessableEntity, "NotZip", ""},
		"another media type is 415":                     {"text/plain", greeterPack("1.0.0", "x").Zip(), http.StatusUnsupportedMediaType, "", ""},
		"a body beyond 8 MiB and a little is 413":       {"application/zip", bytes.Repeat([]byte{'x'}, pack.MaxCompressedBytes+128<<10), http.StatusRequestEntityTooLarge, "", ""},
		"a path that climbs out is 422 with its path":   {"application/zip", traversal.Zip(), http.StatusUnprocessableEntity, "ParentTraversal", "../agents/x.yaml"},
		"an archive just over 8 MiB is 413 with reason": {"application/zip", bytes.Repeat([]byte{'x'}, pack.MaxCompressedBytes+1), http.StatusRequestEntityTooLarge, "CompressedTooLarge", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			for _, path := range []string{"/api/packs/preview", "/api/packs"} {
				r := postArchive(t, server, path, tc.contentType, tc.body)
				expectProblem(g, r, tc.status)
				if tc.reason != "" {
					g.Expect(r.body).To(HaveKeyWithValue("reason", tc.reason))
				}
				if tc.path != "" {
					g.Expect(r.body).To(HaveKeyWithValue("path", tc.path))
				}
			}
			var n int
			g.Expect(db.DB().QueryRow(`SELECT COUNT(*) FROM pack_archives`).Scan(&n)).To(Succeed())
			g.Expect(n).To(BeZero(), "a refused archive is not stored")
		})
	}
}

func TestAnInstallThatWouldOverwriteAResourceItDoesNotOwnIs409AndWritesNothing(t *testing.T) {
	g := NewWithT(t)
	server, db := packServer(t)
	ctx := context.Background()
	kns, err := resourcenamespace.Ensure(ctx, platformKube, "default", "acme.taken")
	g.Expect(err).NotTo(HaveOccurred())
	mine := &platformv1.Agent{}
	mine.Namespace, mine.Name = kns, "greeter"
	mine.Definition.Handler, mine.Definition.Instructions = "chat", "Mine."
	g.Expect(kube.Create(ctx, mine)).To(Succeed())
	t.Cleanup(func() { _ = kube.Delete(ctx, mine) })
	p := greeterPack("1.0.0", "Say hello.")
	p.Name = "taken"

	r := postArchive(t, server, "/api/packs", "application/zip", p.Zip())
	expectProblem(g, r, http.StatusConflict)
	g.Expect(r.body["changes"]).To(ConsistOf(And(HaveKeyWithValue("name", "greeter"), HaveKeyWithValue("action", "conflict"),
		HaveKeyWithValue("reason", "exists and is not owned by this Pack"))))
	g.Expect(call(t, server, http.MethodGet, "/api/packs/acme/taken", "").status).To(Equal(http.StatusNotFound))
	var n int
	g.Expect(db.DB().QueryRow(`SELECT COUNT(*) FROM pack_archives`).Scan(&n)).To(Succeed())
	g.Expect(n).To(BeZero(), "a refused install stores nothing")
	g.Expect(kube.Get(ctx, client.ObjectKeyFromObject(mine), mine)).To(Succeed())
	g.Expect(mine.Definition.Instructions).To(Equal("Mine."))
}

func TestBindingSelectionsAreKeptByPackIdentityBeforeInstallAndAcrossUninstall(t *testing.T) {
	g := NewWithT(t)
	server, _ := packServer(t)
	p := greeterPack("1.0.0", "Say hello.")
	p.Name = "bound"
	p.Bindings = "  - name: model\n    targetKind: modelProfile\n    required: true\n"
	p.Resources["agents/greeter.yaml"] += "  modelProfile:\n    binding: model\n"

	set := call(t, server, http.MethodPut, "/api/packs/acme/bound/bindings", `{"bindings":{"model":{"namespace":"default","name":"offline"}}}`)
	g.Expect(set.status).To(Equal(http.StatusOK), set.raw)
	preview := postArchive(t, server, "/api/packs/preview", "application/zip", p.Zip())
	g.Expect(preview.status).To(Equal(http.StatusOK), preview.raw)
	g.Expect(field(preview.body, "changeSet", "bindings")).To(ConsistOf(HaveKeyWithValue("selection", HaveKeyWithValue("name", "offline"))))

	installed := postArchive(t, server, "/api/packs", "application/zip", p.Zip())
	g.Expect(installed.status).To(Equal(http.StatusCreated), installed.raw)
	g.Expect(call(t, server, http.MethodDelete, "/api/packs/acme/bound", "").body).To(HaveKeyWithValue("state", "removed"))
	again := postArchive(t, server, "/api/packs/preview", "application/zip", p.Zip())
	g.Expect(field(again.body, "changeSet", "bindings")).To(ConsistOf(HaveKeyWithValue("selection", HaveKeyWithValue("name", "offline"))),
		"the selection survives the uninstall")
	_ = time.Second
}

// packRows are the route-role table's rows of the Packs area. No InstalledPack controller runs
// beside the table's server, so the rows that would wait for one show that a permitted caller
// reaches the handler (422 for an archive that is no ZIP, 404 for a Pack that is not installed)
// while the other roles are refused before it.
func packRows(rows map[string]tableRow) {
	archive := string(packstest.Pack{Publisher: "table", Name: "kit", Version: "1.0.0",
		Resources: map[string]string{"agents/table-kit.yaml": packstest.Agent("table-kit", "Help")}}.Zip())
	zipped := []string{"Content-Type", "application/zip"}
	rows["list-packs"] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(200), get("/api/packs")}
	rows["get-pack"] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(404), get("/api/packs/table/kit")}
	rows["preview-pack"] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(200), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/packs/preview", body: archive, headers: zipped}
	}}
	rows["install-pack"] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(422), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/packs", body: "not a zip", headers: zipped}
	}}
	rows["set-pack-bindings"] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(200), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodPut, path: "/api/packs/table/kit/bindings", body: `{"bindings":{}}`}
	}}
	rows["preview-pack-uninstall"] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(404), get("/api/packs/table/kit/uninstall-preview")}
	rows["preview-pack-rollback"] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(404), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/packs/table/kit/rollback/preview"}
	}}
	rows["rollback-pack"] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(404), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/packs/table/kit/rollback"}
	}}
	rows["uninstall-pack"] = tableRow{httpapi.PolicyResourcesDelete, ownersAndAdmins(404), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodDelete, path: "/api/packs/table/kit"}
	}}
}

// An InstalledPack whose archive this instance's store does not hold (applied with kubectl, or
// kept in etcd while the SQL store was restored without it) is still listed and read, without its
// bindings, and an operation that needs the archive is a 409 that says why: never a 500.
func TestAnInstalledPackWhoseArchiveIsNotStoredIsListedAndReadNotA500(t *testing.T) {
	g := NewWithT(t)
	installer, _ := packServer(t)
	p := packstest.Pack{Publisher: "unstored", Name: "kit", Version: "1.0.0", Resources: map[string]string{
		"agents/keeper.yaml": packstest.Agent("keeper", "Keep it."),
	}}
	t.Cleanup(func() { call(t, installer, http.MethodDelete, "/api/packs/unstored/kit", "") })
	installed := postArchive(t, installer, "/api/packs", "application/zip", p.Zip())
	g.Expect(installed.status).To(Equal(http.StatusCreated), installed.raw)

	// Another instance on the same control plane with a SQL store of its own.
	api, err := service.New(httpapi.Options{
		Config: config.FromMap(config.Testing, map[string]string{"Platform:Authentication:Mode": "Development"}),
		Kube:   kube, PlatformKube: platformKube, Packs: &packs.Store{DB: storeFor(t)},
		Ready: func(ctx context.Context) error { return env.Server().Ready(ctx) },
	})
	g.Expect(err).NotTo(HaveOccurred())
	reader := httptest.NewServer(api.Handler())
	t.Cleanup(reader.Close)

	list := call(t, reader, http.MethodGet, "/api/packs", "")
	g.Expect(list.status).To(Equal(http.StatusOK), list.raw)
	g.Expect(list.raw).To(ContainSubstring(`"publisher":"unstored"`))
	read := call(t, reader, http.MethodGet, "/api/packs/unstored/kit", "")
	g.Expect(read.status).To(Equal(http.StatusOK), read.raw)
	g.Expect(read.body).To(HaveKeyWithValue("version", "1.0.0"))
	uninstall := call(t, reader, http.MethodGet, "/api/packs/unstored/kit/uninstall-preview", "")
	g.Expect(uninstall.status).To(BeNumerically("<", 500), uninstall.raw)
}
