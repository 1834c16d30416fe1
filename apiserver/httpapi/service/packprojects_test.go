package service_test

import (
	"archive/zip"
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/internal/pack"
)

func composedProviderBody(name, secret string) string {
	return `{"apiVersion":"platform/v1","kind":"ModelProvider","metadata":{"name":"` + name + `"},` +
		`"definition":{"type":"OpenAICompatible","endpoint":"http://127.0.0.1:11434/v1","credential":{"name":"` + secret + `"}}}`
}

func composedAgentBody(name, profile string) string {
	return `{"apiVersion":"platform/v1","kind":"Agent","metadata":{"name":"` + name + `","tags":{"team":"support"}},` +
		`"definition":{"displayName":"Composed","instructions":"Triage requests","modelProfile":{"name":"` + profile + `"}}}`
}

func projectBody(selection ...string) string {
	return `{"publisher":"acme","name":"triage-kit","version":"1.0.0","displayName":"Triage kit","selection":["` +
		strings.Join(selection, `","`) + `"]}`
}

// archiveEntries are the files of a ZIP archive, decompressed.
func archiveEntries(g Gomega, data []byte) map[string]string {
	r, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, f := range r.File {
		rc, err := f.Open()
		g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
		b, err := io.ReadAll(rc)
		g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
		rc.Close()
		out[f.Name] = string(b)
	}
	return out
}

func TestAComposedPackNeverCopiesASecretValueAndTheSameSelectionGivesTheSameArchive(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, db *store.Store) {
		g := NewWithT(t)
		e := newIdentityEnv(t, db)
		as := func(method, path, body string) response {
			return e.do(e.adminCookie, method, path, body, httpapi.WorkspaceHeader, e.ws.RouteName)
		}
		const value = "sk-composed-never-copied-5d2a"
		for _, c := range []struct{ method, path, body string }{
			{http.MethodPut, "/api/vaults/local", vaultBody("local", "")},
			{http.MethodPut, "/api/secrets/models-key", secretBody("models-key", "local", "", "")},
			{http.MethodPut, "/api/secrets/models-key/value", `{"value":"` + value + `"}`},
			{http.MethodPost, "/api/modelproviders", composedProviderBody("models", "models-key")},
			{http.MethodPost, "/api/modelprofiles", profileBody("small", "models", "small-1")},
			{http.MethodPost, "/api/agents", composedAgentBody("sorter", "small")},
		} {
			r := as(c.method, c.path, c.body)
			g.Expect(r.status).To(BeNumerically("<", 300), "%s %s: %v", c.method, c.path, r.body)
		}

		inventory := as(http.MethodGet, "/api/pack-projects/composer/resources", "")
		g.Expect(inventory.status).To(Equal(http.StatusOK), "%v", inventory.body)
		g.Expect(inventory.body["items"]).To(ContainElements(
			And(HaveKeyWithValue("key", "Secret/models-key"), HaveKeyWithValue("role", "binding"), HaveKeyWithValue("selectable", false)),
			And(HaveKeyWithValue("key", "Vault/local"), HaveKeyWithValue("role", "unsupported"), HaveKeyWithValue("selectable", false)),
			And(HaveKeyWithValue("key", "ModelProvider/models"), HaveKeyWithValue("role", "resource"), HaveKeyWithValue("selectable", true)),
		))

		preview := as(http.MethodPost, "/api/pack-projects/composer/preview", `{"selection":["Agent/sorter","ModelProfile/small"]}`)
		g.Expect(preview.status).To(Equal(http.StatusOK), "%v", preview.body)
		g.Expect(preview.body["resources"]).To(ConsistOf(
			And(HaveKeyWithValue("key", "Agent/sorter"), HaveKeyWithValue("origin", "direct"), HaveKeyWithValue("path", "agents/sorter.yaml")),
			And(HaveKeyWithValue("key", "ModelProfile/small"), HaveKeyWithValue("origin", "direct"), HaveKeyWithValue("leaveAsDependency", false)),
			And(HaveKeyWithValue("key", "ModelProvider/models"), HaveKeyWithValue("origin", "automatic"), HaveKeyWithValue("requiredBy", ConsistOf("ModelProfile/small"))),
		))
		g.Expect(preview.body["bindings"]).To(ConsistOf(And(HaveKeyWithValue("name", "models-key"), HaveKeyWithValue("targetKind", "secret"))))
		g.Expect(preview.body["issues"]).To(BeEmpty())

		created := as(http.MethodPost, "/api/pack-projects", projectBody("Agent/sorter", "ModelProfile/small"))
		g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
		g.Expect(created.body).To(HaveKeyWithValue("direct", ConsistOf("Agent/sorter", "ModelProfile/small")))
		g.Expect(created.body).To(HaveKeyWithValue("automatic", ConsistOf("ModelProvider/models")))
		g.Expect(created.body).To(HaveKeyWithValue("fileName", "acme.triage-kit-1.0.0.zip"))
		id, _ := created.body["id"].(string)
		g.Expect(created.body).To(HaveKeyWithValue("archiveUrl", "/api/pack-projects/"+id+"/archive"))

		download := as(http.MethodGet, "/api/pack-projects/"+id+"/archive", "")
		g.Expect(download.status).To(Equal(http.StatusOK))
		g.Expect(download.header.Get("Content-Type")).To(Equal("application/zip"))
		g.Expect(download.header.Get("Content-Disposition")).To(Equal("attachment; filename=acme.triage-kit-1.0.0.zip"))
		data := []byte(download.raw)
		g.Expect(download.raw).NotTo(ContainSubstring(value))
		entries := archiveEntries(g, data)
		for path, content := range entries {
			g.Expect(content).NotTo(ContainSubstring(value), "%s carries the Secret's value", path)
		}
		g.Expect(entries["modelproviders/models.yaml"]).To(ContainSubstring("binding: models-key"))
		a, err := pack.Read(data, "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(a.Digest)).To(Equal(created.body["digest"]), "the download is the archive whose digest the project shows")

		again := as(http.MethodPost, "/api/pack-projects", projectBody("ModelProfile/small", "Agent/sorter"))
		g.Expect(again.status).To(Equal(http.StatusCreated), "%v", again.body)
		g.Expect(again.body["id"]).NotTo(Equal(id))
		g.Expect(again.body["digest"]).To(Equal(created.body["digest"]), "the same selection of unchanged resources: byte-identical archive")
		second := as(http.MethodGet, "/api/pack-projects/"+again.body["id"].(string)+"/archive", "")
		g.Expect(second.raw).To(Equal(download.raw))

		list := as(http.MethodGet, "/api/pack-projects", "")
		g.Expect(list.status).To(Equal(http.StatusOK))
		g.Expect(list.body["items"]).To(HaveLen(2))
		g.Expect(list.body["items"].([]any)[0]).To(HaveKeyWithValue("id", again.body["id"]), "newest first")
		g.Expect(as(http.MethodGet, "/api/pack-projects/"+id, "").body).To(HaveKeyWithValue("digest", created.body["digest"]))
		expectProblem(g, as(http.MethodGet, "/api/pack-projects/no-such-project/archive", ""), http.StatusNotFound)
	})
}

func TestCreatingAPackProjectRecomputesValidationAndAcceptsOnlyDefaultNamespaceResources(t *testing.T) {
	g := NewWithT(t)
	e := newIdentityEnv(t, storeFor(t))
	as := func(method, path, body string) response {
		return e.do(e.adminCookie, method, path, body, httpapi.WorkspaceHeader, e.ws.RouteName)
	}
	r := as(http.MethodPost, "/api/agents", agentBody("sorter", "Sorter"))
	g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)
	r = as(http.MethodPost, "/api/flows", directFlowBody("orphan", "gone", "Orphan"))
	g.Expect(r.status).To(Equal(http.StatusCreated), "%v", r.body)

	for name, c := range map[string]struct {
		selection []string
		message   string
	}{
		"a Flow whose Agent does not exist":   {[]string{"Flow/orphan"}, `refers to Agent \"gone\", which does not exist`},
		"a key of another resource namespace": {[]string{"Agent/acme.kit/sorter"}, "only default-namespace resources"},
		"an unknown key":                      {[]string{"Agent/nobody"}, "does not exist in the default namespace"},
		"an unsupported kind":                 {[]string{"Vault/local"}, "Vaults cannot be exported"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			preview := as(http.MethodPost, "/api/pack-projects/composer/preview", `{"selection":["`+strings.Join(c.selection, `","`)+`"]}`)
			g.Expect(preview.status).To(Equal(http.StatusOK))
			g.Expect(preview.body["issues"]).To(ContainElement(HaveKeyWithValue("message", ContainSubstring(strings.ReplaceAll(c.message, `\"`, `"`)))))
			refused := as(http.MethodPost, "/api/pack-projects", projectBody(append(c.selection, "Agent/sorter")...))
			expectProblem(g, refused, http.StatusUnprocessableEntity)
			g.Expect(refused.raw).To(ContainSubstring(c.message))
		})
	}
	expectProblem(g, as(http.MethodPost, "/api/pack-projects", `{"publisher":"Acme!","name":"kit","version":"1.0.0","selection":["Agent/sorter"]}`),
		http.StatusUnprocessableEntity)
	expectProblem(g, as(http.MethodPost, "/api/pack-projects", `{"publisher":"acme","name":"kit","version":"v1","selection":["Agent/sorter"]}`),
		http.StatusUnprocessableEntity)
	list := as(http.MethodGet, "/api/pack-projects", "")
	g.Expect(list.body["items"]).To(BeEmpty(), "a refused project stores nothing")
}

// packProjects remembers the project each table fixture's get and download rows read.
var packProjects sync.Map

// packProjectRows are the rows of the Composer: reads and previews for every role of the
// workspace, project creation for Owner and Admin.
func packProjectRows(rows map[string]tableRow) {
	project := func(f *tableFixture) string {
		if id, ok := packProjects.Load(f); ok {
			return id.(string)
		}
		r := f.as(platformAdmin, http.MethodPost, "/api/pack-projects", projectBody("Entry/table-entry"))
		if r.status != http.StatusCreated {
			f.t.Fatalf("fixture pack project: %d %v", r.status, r.body)
		}
		packProjects.Store(f, r.body["id"])
		return r.body["id"].(string)
	}
	rows["list-composer-resources"] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(200), get("/api/pack-projects/composer/resources")}
	rows["preview-pack-project"] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(200), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/pack-projects/composer/preview", body: `{"selection":["Entry/table-entry"]}`}
	}}
	rows["create-pack-project"] = tableRow{httpapi.PolicyResourcesWrite, ownersAndAdmins(201), func(*tableFixture, role) tableRequest {
		return tableRequest{method: http.MethodPost, path: "/api/pack-projects", body: projectBody("Agent/table-agent")}
	}}
	rows["list-pack-projects"] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(200), get("/api/pack-projects")}
	rows["get-pack-project"] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(200), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodGet, path: "/api/pack-projects/" + project(f)}
	}}
	rows["download-pack-project-archive"] = tableRow{httpapi.PolicyResourcesRead, workspaceRoles(200), func(f *tableFixture, _ role) tableRequest {
		return tableRequest{method: http.MethodGet, path: "/api/pack-projects/" + project(f) + "/archive"}
	}}
}
