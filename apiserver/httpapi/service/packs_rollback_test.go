package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/packs/packstest"
	"platform.dev/platform/internal/resourcenamespace"
)

// postNamed sends a Pack archive under a file name, as the Console does with the chosen file.
func postNamed(t *testing.T, server *httptest.Server, path, fileName string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, server.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/zip")
	req.Header.Set("X-Pack-File-Name", fileName)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	out := response{status: resp.StatusCode, header: resp.Header, raw: string(data)}
	if err := json.Unmarshal(data, &out.body); err != nil {
		t.Fatalf("%s: body is not JSON: %s", path, data)
	}
	return out
}

// namedPack is greeterPack under another Pack name, so that each test has a namespace of its own.
func namedPack(name, version, instructions string) packstest.Pack {
	p := greeterPack(version, instructions)
	p.Name = name
	return p
}

// forget removes what is left of Pack id in the workspace `default` (a degraded record, preserved
// resources), so that the other tests find no trace of it.
func forget(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	_ = platformKube.Delete(ctx, &platformv1.InstalledPack{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: id}})
	_ = platformKube.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: resourcenamespace.KubeName("default", platformv1.ResourceNamespace(id))}})
}

func TestARollbackNamesTheFileOfTheVersionItGoesBackTo(t *testing.T) {
	g := NewWithT(t)
	server, _ := packServer(t)
	t.Cleanup(func() { forget(t, "acme.rolled") })
	installed := postNamed(t, server, "/api/packs", "rolled-1.0.0.zip", namedPack("rolled", "1.0.0", "Say hello.").Zip())
	g.Expect(installed.status).To(Equal(http.StatusCreated), installed.raw)
	updated := postNamed(t, server, "/api/packs", "rolled-1.1.0.zip", namedPack("rolled", "1.1.0", "Say hello warmly.").Zip())
	g.Expect(updated.status).To(Equal(http.StatusOK), updated.raw)
	g.Expect(field(updated.body, "source", "fileName")).To(Equal("rolled-1.1.0.zip"))

	preview := call(t, server, http.MethodPost, "/api/packs/acme/rolled/rollback/preview", "")
	g.Expect(preview.status).To(Equal(http.StatusOK), preview.raw)
	g.Expect(field(preview.body, "pack", "fileName")).To(Equal("rolled-1.0.0.zip"), "the preview shows the file rolled back to")
	rolledBack := call(t, server, http.MethodPost, "/api/packs/acme/rolled/rollback", "")
	g.Expect(rolledBack.status).To(Equal(http.StatusOK), rolledBack.raw)
	g.Expect(rolledBack.body).To(HaveKeyWithValue("version", "1.0.0"))
	g.Expect(field(rolledBack.body, "source", "fileName")).To(Equal("rolled-1.0.0.zip"))
	g.Expect(field(rolledBack.body, "source", "digest")).To(Equal(field(installed.body, "source", "digest")))

	again := call(t, server, http.MethodPost, "/api/packs/acme/rolled/rollback", "")
	g.Expect(again.status).To(Equal(http.StatusOK), again.raw)
	g.Expect(field(again.body, "source", "fileName")).To(Equal("rolled-1.1.0.zip"), "rolling forward again names the newer file again")
}
