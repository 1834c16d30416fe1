package e2e

import (
	"bytes"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/provider/openaitest"
)

// TestSecretValuesStayWriteOnlyFromTheAPIToTheModelCall is the newcomer's path through the built
// binary: initialize the Local Vault, apply the samples, write the Secret's value through the
// API, see the Secret Configured and the Vault Available, and have an agent's model call carry
// the key from its provider's Secret. Then it searches the server's logs, the SQL store's files,
// etcd's files, every API response, the audit records and kubectl's output for the values
// written: none may hold one in plain text.
func TestSecretValuesStayWriteOnlyFromTheAPIToTheModelCall(t *testing.T) {
	requireKubectl(t)
	g := NewWithT(t)
	dataDir := t.TempDir()
	s := mustStartServer(t, dataDir)
	var responses bytes.Buffer
	client := &api{t: t, base: s.ServiceURL(t), transcript: &responses}
	values := map[string]string{
		"workspace": "sk-e2e-workspace-value-7d41c0a9",
		"tenant":    "sk-e2e-tenant-value-b35e21f8",
		"instance":  "sk-e2e-instance-value-90aa6c17",
		"replaced":  "sk-e2e-replaced-value-4f0e9d22",
	}

	client.must(http.StatusCreated, http.MethodPost, "/api/auth/bootstrap", "", map[string]any{
		"username": "admin", "password": e2ePassword, "displayName": "Admin", "tenantName": "Acme", "workspaceName": "home"})
	tenantID := client.must(http.StatusOK, http.MethodGet, "/api/identity/workspaces/home", "", nil)["tenantId"].(string)

	// The newcomer's commands: initialize the vault, apply the samples, set the value.
	status := client.must(http.StatusOK, http.MethodGet, "/api/local-vault", "", nil)
	g.Expect(status["reason"]).To(Equal("MasterKeyMissing"))
	initialized := client.must(http.StatusCreated, http.MethodPost, "/api/local-vault/initialize", "", nil)
	keyFile := filepath.Join(dataDir, "local-vault.key")
	g.Expect(initialized).To(Equal(map[string]any{"status": "Available", "path": keyFile}))
	info, err := os.Stat(keyFile)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
	client.must(http.StatusConflict, http.MethodPost, "/api/local-vault/initialize", "", nil)

	s.mustKubectl(t, "apply", "-n", "home", "-f", samplesDir)
	jsonpath := func(resource, name, path string) string {
		return strings.TrimSpace(s.kubectl("get", resource, name, "-n", "home", "-o", "jsonpath="+path).Stdout)
	}
	g.Eventually(func() string { return jsonpath("vaults.platform.dev", "local", "{.status.availability}") }).
		WithTimeout(30 * time.Second).Should(Equal("Available"))
	g.Eventually(func() string { return jsonpath("secrets.platform.dev", "openai-api-key", "{.status.state}") }).
		WithTimeout(30 * time.Second).Should(Equal("Missing"))
	client.must(http.StatusNoContent, http.MethodPut, "/api/secrets/openai-api-key/value", "home", map[string]any{"value": values["workspace"]})
	g.Eventually(func() string {
		return jsonpath("secrets.platform.dev", "openai-api-key", `{.status.state} {.status.conditions[?(@.type=="Ready")].status}`)
	}).WithTimeout(30 * time.Second).Should(Equal("Configured True"))

	// A replaced value, and values of the tenant and of the instance.
	client.must(http.StatusNoContent, http.MethodPut, "/api/secrets/openai-api-key/value", "home", map[string]any{"value": values["replaced"]})
	client.must(http.StatusNoContent, http.MethodPut, "/api/secrets/openai-api-key/value", "home", map[string]any{"value": values["workspace"]})
	for scope, prefix := range map[string]string{"tenant": "/api/tenants/" + tenantID, "instance": "/api/instance"} {
		client.must(http.StatusCreated, http.MethodPut, prefix+"/vaults/central", "", map[string]any{"apiVersion": "platform/v1", "kind": "Vault",
			"metadata": map[string]any{"name": "central"}, "definition": map[string]any{"provider": "Local"}})
		client.must(http.StatusCreated, http.MethodPut, prefix+"/secrets/shared-key", "", map[string]any{"apiVersion": "platform/v1", "kind": "Secret",
			"metadata":   map[string]any{"name": "shared-key"},
			"definition": map[string]any{"vault": map[string]any{"name": "central"}, "usePolicy": map[string]any{"grants": []any{map[string]any{"scopeRef": "/tenants/" + tenantID, "includeDescendants": true}}}}})
		client.must(http.StatusNoContent, http.MethodPut, prefix+"/secrets/shared-key/value", "", map[string]any{"value": values[scope]})
	}
	client.must(http.StatusUnprocessableEntity, http.MethodPut, "/api/secrets/openai-api-key/value", "home", map[string]any{"value": strings.Repeat("v", 65537)})

	// An agent's model call carries the key of its provider's Secret.
	endpoint := openaitest.New()
	defer endpoint.Close()
	endpoint.Set(func(e *openaitest.Server) { e.APIKey = values["workspace"] })
	manifest := `apiVersion: platform.dev/v1
kind: ModelProvider
metadata: {name: test-llm}
definition: {type: OpenAICompatible, endpoint: "` + endpoint.BaseURL() + `", credential: {name: openai-api-key}}
---
apiVersion: platform.dev/v1
kind: ModelProfile
metadata: {name: test}
definition: {provider: {name: test-llm}, modelId: gpt-test}
---
apiVersion: platform.dev/v1
kind: Agent
metadata: {name: asker}
definition: {instructions: Answer briefly., modelProfile: {name: test}}
`
	r := s.kubectlStdin(manifest, "apply", "-n", "home", "-f", "-")
	g.Expect(r.ExitCode).To(Equal(0), r.String())
	uid := jsonpath("agents.platform.dev", "asker", "{.metadata.uid}")
	run := client.must(http.StatusAccepted, http.MethodPost, "/api/runtime/runs", "home", map[string]any{
		"agent": map[string]any{"resourceId": uid}, "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hello"}}}})
	g.Eventually(func() any {
		_, out := client.call(http.MethodGet, "/api/runtime/runs/"+run["id"].(string), "home", nil)
		return out["status"]
	}).WithTimeout(30 * time.Second).Should(Equal("Completed"))
	chats := endpoint.Chats()
	g.Expect(chats).NotTo(BeEmpty())
	g.Expect(chats[0].Authorization).To(Equal("Bearer " + values["workspace"]))

	// Reads of every kind, and the audit records, join the responses searched below.
	for _, path := range []string{"/api/secrets", "/api/secrets/openai-api-key", "/api/vaults", "/api/vaults/local", "/api/modelproviders/test-llm"} {
		client.must(http.StatusOK, http.MethodGet, path, "home", nil)
	}
	for _, prefix := range []string{"/api/tenants/" + tenantID, "/api/instance"} {
		client.must(http.StatusOK, http.MethodGet, prefix+"/secrets", "", nil)
		client.must(http.StatusOK, http.MethodGet, prefix+"/secrets/shared-key", "", nil)
	}
	client.must(http.StatusOK, http.MethodGet, "/api/identity/audit-events", "", nil)
	kubectlOut := s.mustKubectl(t, "get", "secrets.platform.dev,vaults.platform.dev,events", "-A", "-o", "yaml")

	// The server flushes its files on a clean stop; search them after it.
	if code, _, err := s.stop(); err != nil || code != 0 {
		t.Fatalf("stop: exit code %d, %v", code, err)
	}
	searched := map[string][]byte{
		"the server's output": []byte(s.output()),
		"every API response":  responses.Bytes(),
		"kubectl's output":    []byte(kubectlOut),
	}
	err = filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == keyFile {
			return err
		}
		data, err := os.ReadFile(path)
		searched[path] = data
		return err
	})
	g.Expect(err).NotTo(HaveOccurred())
	// The search reads real content: each source holds the Secret's name, in the clear.
	sqlFiles, etcdFiles := 0, 0
	for path := range searched {
		switch {
		case strings.HasPrefix(filepath.Base(path), "platform.db"):
			sqlFiles++
		case strings.HasPrefix(path, filepath.Join(dataDir, "etcd")+string(filepath.Separator)):
			etcdFiles++
		}
	}
	g.Expect(sqlFiles).To(BeNumerically(">", 0), "the SQL store's files are searched")
	g.Expect(etcdFiles).To(BeNumerically(">", 0), "etcd's files are searched")
	g.Expect(bytes.Contains(searched[filepath.Join(dataDir, "platform.db")], []byte("openai-api-key"))).To(BeTrue())
	g.Expect(anyContains(searched, filepath.Join(dataDir, "etcd"), "openai-api-key")).To(BeTrue())
	g.Expect(bytes.Contains(responses.Bytes(), []byte("openai-api-key"))).To(BeTrue())
	g.Expect(bytes.Contains(responses.Bytes(), []byte(`"action":"local-account.login"`)) ||
		bytes.Contains(responses.Bytes(), []byte(`instance.bootstrapped`))).To(BeTrue(), "the audit records are among the responses")
	for what, data := range searched {
		for scope, value := range values {
			g.Expect(bytes.Contains(data, []byte(value))).To(BeFalse(), "%s holds the %s value in plain text", what, scope)
		}
	}
}

// anyContains says whether a file under dir among searched holds text.
func anyContains(searched map[string][]byte, dir, text string) bool {
	for path, data := range searched {
		if strings.HasPrefix(path, dir) && bytes.Contains(data, []byte(text)) {
			return true
		}
	}
	return false
}
