package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/manifest"
	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/service"
	"platform.dev/platform/apiserver/testenv"
	"platform.dev/platform/internal/config"
	"platform.dev/platform/internal/resourcenamespace"
)

// The tests of this file try each rule of the kube API's admission (package apiserver/admission)
// through the real kubectl, as the administrator, and through the service API, on the same
// control plane: both meet the same code and nothing changes. They run the control plane and the
// service API in-process because what only the platform writes (published Entries,
// system-managed Flows) can be set up only with the platform's own identity, which no client of
// a `platform serve` process holds.

// rules is an in-process control plane, the service API over it in Development mode (workspace
// "default") and the platform's own client.
type rules struct {
	t        *testing.T
	env      *testenv.Env
	platform client.Client
	api      *httptest.Server
}

func startRules(t *testing.T) *rules {
	t.Helper()
	requireKubectl(t)
	env, err := testenv.Start(context.Background(), testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	platform, err := client.New(env.Platform, client.Options{Scheme: platformscheme.Scheme, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	serviceKube, err := client.New(env.ServiceAPI, client.Options{Scheme: platformscheme.Scheme, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	api, err := service.New(httpapi.Options{
		Config: config.FromMap(config.Testing, map[string]string{"Platform:Authentication:Mode": "Development"}),
		Kube:   serviceKube, PlatformKube: platform, Ready: env.Server().Ready,
	})
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(api.Handler())
	t.Cleanup(server.Close)
	return &rules{t: t, env: env, platform: platform, api: server}
}

// kubectl runs kubectl as the administrator (system:masters, not the platform).
func (r *rules) kubectl(args ...string) runResult {
	return kubectlWith(r.env.Kubeconfig, "", args...)
}

// refused checks that kubectl fails with Forbidden and reason.
func (r *rules) refused(reason string, args ...string) {
	r.t.Helper()
	res := r.kubectl(args...)
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "(Forbidden)") || !strings.Contains(res.Stderr, reason) {
		r.t.Errorf("kubectl %s: want Forbidden with %q, got: %s", strings.Join(args, " "), reason, res)
	}
}

// succeeds runs kubectl and returns its stdout; the test fails unless it exits 0.
func (r *rules) succeeds(args ...string) string {
	r.t.Helper()
	res := r.kubectl(args...)
	if res.ExitCode != 0 {
		r.t.Fatalf("kubectl: %s", res)
	}
	return res.Stdout
}

// apply applies a manifest with kubectl and returns the result.
func (r *rules) apply(manifest string) runResult {
	return kubectlWith(r.env.Kubeconfig, manifest, "apply", "-f", "-")
}

// call is one request to the service API, with If-Match when etag is set.
func (r *rules) call(method, path, etag string, body any) (int, http.Header, map[string]any) {
	r.t.Helper()
	var reader io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		reader = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, r.api.URL+path, reader)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if etag != "" {
		req.Header.Set("If-Match", etag)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, resp.Header, out
}

// must is call, failing the test unless the status is want.
func (r *rules) must(want int, method, path string, body any) map[string]any {
	r.t.Helper()
	status, _, out := r.call(method, path, "", body)
	if status != want {
		r.t.Fatalf("%s %s: status %d, want %d: %v", method, path, status, want, out)
	}
	return out
}

// conflict checks that a write of path with its current ETag answers 409 Problem Details with
// detail.
func (r *rules) conflict(method, path string, body any, detail string) {
	r.t.Helper()
	_, header, _ := r.call(http.MethodGet, path, "", nil)
	status, respHeader, out := r.call(method, path, header.Get("ETag"), body)
	if status != http.StatusConflict || respHeader.Get("Content-Type") != "application/problem+json" || !strings.Contains(out["detail"].(string), detail) {
		r.t.Errorf("%s %s: want 409 Problem Details with %q, got %d %v", method, path, detail, status, out)
	}
}

// publishEntry writes, as the platform, the PublishedEntry that publication of an Entry writes.
func (r *rules) publishEntry(namespace, name string, target platformv1.FlowVersionReference) {
	r.t.Helper()
	entry := &platformv1.PublishedEntry{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Definition: platformv1.PublishedEntryDefinition{OwnerWorkspaceID: "default", ResolvedTarget: target},
	}
	if err := r.platform.Create(context.Background(), entry); err != nil {
		r.t.Fatal(err)
	}
}

func agentManifest(name, namespace string) string {
	return "apiVersion: platform.dev/v1\nkind: Agent\nmetadata: {name: " + name + ", namespace: " + namespace + "}\ndefinition: {instructions: Answer.}\n"
}

func directFlow(name, agent string) map[string]any {
	return map[string]any{"name": name, "kind": "Direct", "definition": map[string]any{"target": map[string]any{"kind": "Agent", "id": agent}}}
}

// TestDeletingAnAgentOrUserFlowThatAPublishedEntryPinsIsRefusedNamingTheEntry: an Agent invoked
// by a pinned version (as a Direct target or in an Agent step, or by the Flow's definition while
// the pinned version is not published) and a Flow with a pinned version cannot be deleted, also
// when the Entry lives in another resource namespace of the workspace; once the Entries are gone
// they can.
func TestDeletingAnAgentOrUserFlowThatAPublishedEntryPinsIsRefusedNamingTheEntry(t *testing.T) {
	r := startRules(t)
	for _, agent := range []string{"pinned-agent", "step-agent"} {
		r.must(http.StatusCreated, http.MethodPost, "/api/agents", map[string]any{"apiVersion": "platform/v1", "kind": "Agent",
			"metadata": map[string]any{"name": agent}, "definition": map[string]any{"instructions": "Answer."}})
	}
	r.must(http.StatusCreated, http.MethodPost, "/api/flows", directFlow("pinned-flow", "pinned-agent"))
	r.must(http.StatusCreated, http.MethodPost, "/api/flows/pinned-flow/versions", map[string]any{"version": "1.0.0"})
	r.must(http.StatusCreated, http.MethodPost, "/api/flows", map[string]any{"name": "step-flow", "kind": "Orchestration", "definition": map[string]any{
		"steps": []any{map[string]any{"name": "in", "type": "Input"}, map[string]any{"name": "work", "type": "Agent", "agent": map[string]any{"name": "step-agent"}},
			map[string]any{"name": "out", "type": "Output"}},
		"edges": []any{map[string]any{"from": "in", "to": "work"}, map[string]any{"from": "work", "to": "out"}}}})
	// A Pack's namespace of the same workspace, with an Agent and a published Flow of its own.
	pack, err := resourcenamespace.Ensure(context.Background(), r.platform, "default", "contoso.reports")
	if err != nil {
		t.Fatal(err)
	}
	if res := r.apply(agentManifest("pack-agent", pack) + "---\napiVersion: platform.dev/v1\nkind: Flow\nmetadata: {name: pack-flow, namespace: " + pack +
		"}\ndefinition: {flowKind: Direct, target: {kind: Agent, id: pack-agent}}\n"); res.ExitCode != 0 {
		t.Fatal(res)
	}
	snapshot := platformv1.FlowDefinition{FlowKind: platformv1.DirectFlow, Version: "1.0.0", Target: &platformv1.FlowTarget{Kind: platformv1.AgentFlowTarget, ID: "pack-agent"}}
	if err := r.platform.Create(context.Background(), &platformv1.FlowVersion{ObjectMeta: metav1.ObjectMeta{Namespace: pack, Name: "pack-flow-1.0.0"},
		Definition: platformv1.FlowVersionDefinition{FlowName: "pack-flow", Version: "1.0.0", Digest: snapshot.Digest(), Snapshot: snapshot}}); err != nil {
		t.Fatal(err)
	}
	r.publishEntry("default", "pinned-entry", platformv1.FlowVersionReference{Name: "pinned-flow", Version: "1.0.0"})
	// Version 2.0.0 of step-flow is not published: the Flow's definition decides.
	r.publishEntry("default", "step-entry", platformv1.FlowVersionReference{Name: "step-flow", Version: "2.0.0"})
	r.publishEntry("default", "pack-user", platformv1.FlowVersionReference{Name: "pack-flow", Namespace: "contoso.reports", Version: "1.0.0"})

	cases := []struct{ kind, name, namespace, reason string }{
		{"agent", "pinned-agent", "default", `Agent "pinned-agent" is referenced by published entry "pinned-entry"`},
		{"agent", "step-agent", "default", `Agent "step-agent" is referenced by published entry "step-entry"`},
		{"flow", "pinned-flow", "default", `Flow "pinned-flow" is referenced by published entry "pinned-entry"`},
		{"agent", "pack-agent", pack, `Agent "pack-agent" is referenced by published entry "pack-user" of namespace "default"`},
		{"flow", "pack-flow", pack, `Flow "pack-flow" is referenced by published entry "pack-user" of namespace "default"`},
	}
	for _, c := range cases {
		r.refused(c.reason, "delete", c.kind, c.name, "-n", c.namespace)
		r.succeeds("get", c.kind, c.name, "-n", c.namespace)
	}
	r.conflict(http.MethodDelete, "/api/agents/pinned-agent", nil, `Agent "pinned-agent" is referenced by published entry "pinned-entry"`)
	r.conflict(http.MethodDelete, "/api/agents/step-agent", nil, `Agent "step-agent" is referenced by published entry "step-entry"`)
	r.conflict(http.MethodDelete, "/api/flows/pinned-flow", nil, `Flow "pinned-flow" is referenced by published entry "pinned-entry"`)
	r.must(http.StatusOK, http.MethodGet, "/api/flows/pinned-flow", nil)

	for _, entry := range []string{"pinned-entry", "step-entry", "pack-user"} {
		if err := r.platform.Delete(context.Background(), &platformv1.PublishedEntry{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: entry}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		r.succeeds("delete", c.kind, c.name, "-n", c.namespace)
	}
}

// TestSystemManagedFlowsAreCreatedChangedAndDeletedOnlyByThePlatform: nobody but the platform
// creates a Flow with the system-managed label, sets or removes the label, or changes or deletes
// a system-managed Flow; the platform does all of it.
func TestSystemManagedFlowsAreCreatedChangedAndDeletedOnlyByThePlatform(t *testing.T) {
	r := startRules(t)
	ctx := context.Background()
	labelled := "apiVersion: platform.dev/v1\nkind: Flow\nmetadata: {name: sneaky, namespace: default, labels: {platform/system-managed: \"true\"}}\n" +
		"definition: {flowKind: Direct, target: {kind: Agent, id: helper}}\n"
	if res := r.apply(labelled); res.ExitCode == 0 || !strings.Contains(res.Stderr, "only the platform creates a system-managed Flow") {
		t.Errorf("applying a Flow with the system-managed label: want Forbidden, got: %s", res)
	}
	if res := r.kubectl("get", "flow", "sneaky", "-n", "default"); res.ExitCode == 0 {
		t.Errorf("the labelled Flow was created: %s", res)
	}
	r.must(http.StatusCreated, http.MethodPost, "/api/flows", directFlow("plain", "helper"))
	r.refused("only the platform sets, changes or removes it", "label", "flow", "plain", "-n", "default", manifest.SystemManagedLabel+"=true")
	if got := r.succeeds("get", "flow", "plain", "-n", "default", "-o", "jsonpath={.metadata.labels}"); got != "" {
		t.Errorf("plain carries labels %q", got)
	}

	flow := &platformv1.Flow{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "entry-direct-agent", Labels: map[string]string{manifest.SystemManagedLabel: "true"}},
		Definition: platformv1.FlowDefinition{FlowKind: platformv1.DirectFlow, Enabled: ptr.To(true), Description: "as published",
			Target: &platformv1.FlowTarget{Kind: platformv1.AgentFlowTarget, ID: "helper"}},
	}
	if err := r.platform.Create(ctx, flow); err != nil {
		t.Fatalf("the platform creates a system-managed Flow: %v", err)
	}
	const systemManaged = `Flow "entry-direct-agent" is system-managed`
	r.refused(systemManaged, "patch", "flow", "entry-direct-agent", "-n", "default", "--type=merge", "-p", `{"definition":{"description":"edited"}}`)
	r.refused(systemManaged, "label", "flow", "entry-direct-agent", "-n", "default", manifest.SystemManagedLabel+"-")
	r.refused(systemManaged, "delete", "flow", "entry-direct-agent", "-n", "default")
	r.conflict(http.MethodPut, "/api/flows/entry-direct-agent", directFlow("entry-direct-agent", "other"), systemManaged)
	r.conflict(http.MethodDelete, "/api/flows/entry-direct-agent", nil, systemManaged)
	r.conflict(http.MethodPost, "/api/flows/entry-direct-agent/versions", map[string]any{"version": "9.0.0"}, systemManaged)
	got := r.succeeds("get", "flow", "entry-direct-agent", "-n", "default", "-o", "jsonpath={.definition.description}/{.metadata.labels.platform/system-managed}")
	if got != "as published/true" {
		t.Errorf("the system-managed Flow changed: %q", got)
	}

	if err := r.platform.Get(ctx, client.ObjectKeyFromObject(flow), flow); err != nil {
		t.Fatal(err)
	}
	flow.Definition.Description = "republished"
	if err := r.platform.Update(ctx, flow); err != nil {
		t.Errorf("the platform changes a system-managed Flow: %v", err)
	}
	if err := r.platform.Delete(ctx, flow); err != nil {
		t.Errorf("the platform deletes a system-managed Flow: %v", err)
	}
}

// TestFlowVersionsAndPublishedEntriesAreWrittenOnlyByThePlatform: kubectl cannot create, change
// or delete a FlowVersion or a PublishedEntry, not even as the administrator; the service API's
// publication (the platform) writes versions, and deleting a Flow there deletes them too.
func TestFlowVersionsAndPublishedEntriesAreWrittenOnlyByThePlatform(t *testing.T) {
	r := startRules(t)
	// What publishing a Flow version and an Entry writes.
	published := "apiVersion: platform.dev/v1\nkind: FlowVersion\nmetadata: {name: answer-1.0.0, namespace: default}\n" +
		"definition: {flowName: answer, version: 1.0.0, snapshot: {flowKind: Direct, target: {kind: Agent, id: helper}}}\n---\n" +
		"apiVersion: platform.dev/v1\nkind: PublishedEntry\nmetadata: {name: answer, namespace: default}\n" +
		"definition: {ownerWorkspaceId: default, resolvedTarget: {name: answer, version: 1.0.0}}\n"
	res := r.apply(published)
	if res.ExitCode == 0 || strings.Count(res.Stderr, "(Forbidden)") != 2 ||
		!strings.Contains(res.Stderr, "FlowVersion objects are written only by the platform") ||
		!strings.Contains(res.Stderr, "PublishedEntry objects are written only by the platform") {
		t.Errorf("applying what publication writes: want both refused, got: %s", res)
	}
	if got := r.succeeds("get", "flowversions,publishedentries", "-n", "default", "-o", "name"); got != "" {
		t.Errorf("something was created: %q", got)
	}

	r.must(http.StatusCreated, http.MethodPost, "/api/flows", directFlow("report", "helper"))
	r.must(http.StatusCreated, http.MethodPost, "/api/flows/report/versions", map[string]any{"version": "1.0.0"})
	r.publishEntry("default", "report", platformv1.FlowVersionReference{Name: "report", Version: "1.0.0"})
	for _, obj := range []string{"flowversion/report-1.0.0", "publishedentry/report"} {
		r.refused("written only by the platform", "annotate", obj, "-n", "default", "touched=yes")
		r.refused("written only by the platform", "delete", obj, "-n", "default")
		if got := r.succeeds("get", obj, "-n", "default", "-o", "jsonpath={.metadata.annotations}"); got != "" {
			t.Errorf("%s was changed: %q", obj, got)
		}
	}

	if err := r.platform.Delete(context.Background(), &platformv1.PublishedEntry{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "report"}}); err != nil {
		t.Fatalf("the platform deletes a PublishedEntry: %v", err)
	}
	_, header, _ := r.call(http.MethodGet, "/api/flows/report", "", nil)
	if status, _, out := r.call(http.MethodDelete, "/api/flows/report", header.Get("ETag"), nil); status != http.StatusNoContent {
		t.Fatalf("delete the Flow: %d %v", status, out)
	}
	if got := r.succeeds("get", "flowversions", "-n", "default", "-o", "name"); got != "" {
		t.Errorf("the Flow's versions outlive it: %q", got)
	}
}

// TestAModelProviderThatAModelProfileUsesCannotBeDeleted: refused naming the profile, until the
// profile is gone.
func TestAModelProviderThatAModelProfileUsesCannotBeDeleted(t *testing.T) {
	r := startRules(t)
	res := r.apply("apiVersion: platform.dev/v1\nkind: ModelProvider\nmetadata: {name: local-llm, namespace: default}\n" +
		"definition: {type: OpenAICompatible, endpoint: 'http://127.0.0.1:1/v1'}\n---\n" +
		"apiVersion: platform.dev/v1\nkind: ModelProfile\nmetadata: {name: precise, namespace: default}\n" +
		"definition: {provider: {name: local-llm}, modelId: small-1}\n")
	if res.ExitCode != 0 {
		t.Fatal(res)
	}
	const reason = `Model provider "local-llm" is referenced by model profile "precise"`
	r.refused(reason, "delete", "modelprovider", "local-llm", "-n", "default")
	r.conflict(http.MethodDelete, "/api/modelproviders/local-llm", nil, reason)
	r.succeeds("get", "modelprovider", "local-llm", "-n", "default")
	r.succeeds("delete", "modelprofile", "precise", "-n", "default")
	r.succeeds("delete", "modelprovider", "local-llm", "-n", "default")
}

// TestNoCallerCanImpersonateThePlatform: the administrator may impersonate anyone but the
// platform's own identity, which the rules exempt.
func TestNoCallerCanImpersonateThePlatform(t *testing.T) {
	r := startRules(t)
	g := NewWithT(t)
	r.must(http.StatusCreated, http.MethodPost, "/api/flows", directFlow("report", "helper"))
	r.must(http.StatusCreated, http.MethodPost, "/api/flows/report/versions", map[string]any{"version": "1.0.0"})
	// --raw: kubectl's discovery, refused too, would hide the reason.
	res := r.kubectl("delete", "--raw", "/apis/platform.dev/v1/namespaces/default/flowversions/report-1.0.0", "--as=system:apiserver", "--as-group=system:masters")
	g.Expect(res.ExitCode).NotTo(Equal(0), res.String())
	g.Expect(res.Stderr).To(ContainSubstring("cannot be impersonated"))
	// Impersonating the service API's user is allowed, and held to the rules like everyone.
	res = r.kubectl("delete", "flowversion", "report-1.0.0", "-n", "default", "--as=platform:service-api", "--as-group=system:masters")
	g.Expect(res.ExitCode).NotTo(Equal(0), res.String())
	g.Expect(res.Stderr).To(ContainSubstring("FlowVersion objects are written only by the platform"))
	r.succeeds("get", "flowversion", "report-1.0.0", "-n", "default")
}
