package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/tools"
	"platform.dev/platform/apiserver/tools/aep"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/test/extension"
)

// The example extension, discovered as a ToolProvider of protocol Extension, is called by an
// agent of a Flow exactly as an MCP tool is: offered only once enabled, waiting on an approval
// PendingAction, persisted before and after, under the run's idempotency key; the Secret the
// extension asks for reaches it as a capability that it redeems once.
func TestAnExtensionToolIsCalledByAnAgentAfterAnApprovalAndRedeemsItsSecretOnce(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		kube := realKube(t)
		h := newHarness(t, s)
		ns := fmt.Sprintf("exec-ext-%d-%d", time.Now().UnixNano()%100000, nsCount.Add(1))
		g.Expect(kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

		ext := extension.New(extension.Options{Token: func() string { return "ext-bearer" }})
		extSrv := httptest.NewServer(ext)
		t.Cleanup(extSrv.Close)
		var manager *tools.Manager
		// Redemption as the service API's route does it.
		redeem := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			var in aep.RedeemRequest
			_ = json.NewDecoder(r.Body).Decode(&in)
			role, value, err := manager.Redeem(r.Context(), in.Capability, in.Scope)
			if err != nil {
				rw.WriteHeader(http.StatusForbidden)
				_ = json.NewEncoder(rw).Encode(map[string]string{"detail": err.Error()})
				return
			}
			_ = json.NewEncoder(rw).Encode(aep.RedeemResponse{Role: role, Value: value})
		}))
		t.Cleanup(redeem.Close)
		secrets := map[string]string{"ext-token": "ext-bearer", "weather-key": "wk-secret-value"}
		var err error
		manager, err = tools.NewManager(tools.Options{Kube: kube, RedeemURL: redeem.URL + aep.RedeemPath,
			Secrets: func(_ context.Context, namespace, _ string, ref platformv1.SecretReference) (string, error) {
				if v, ok := secrets[string(ref.Name)]; ok && namespace == ns {
					return v, nil
				}
				return "", errors.New("no such Secret")
			}})
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(manager.Close)

		p := &platformv1.ToolProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wx"},
			Definition: platformv1.ToolProviderDefinition{Protocol: platformv1.ExtensionProtocol, Transport: platformv1.StreamableHTTPTransport,
				HTTP: &platformv1.HTTPTransportSettings{URL: extSrv.URL, AuthenticationMode: platformv1.StaticBearerToolAuthentication,
					Credential: &platformv1.SecretReference{Name: "ext-token"}},
				Extension: &platformv1.ExtensionSettings{Secrets: []platformv1.ExtensionSecretBinding{
					{Role: extension.WeatherKeyRole, Secret: platformv1.SecretReference{Name: "weather-key"}}}},
				TimeoutSeconds: ptr[int32](5)}}
		g.Expect(kube.Create(ctx, p)).To(Succeed())
		refresh, err := manager.Refresh(ctx, p)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(refresh.Created).To(Equal(2))

		w := &toolWorld{harness: h, manager: manager, ns: ns}
		w.wctx = work.Context{TenantID: "t1", WorkspaceID: "ws-" + ns, Namespace: ns, PrincipalID: "p1"}
		w.resolver.agents["assistant"] = provider.Agent{Name: "assistant", Revision: "1", Tools: []string{"wx-lookup-weather"},
			Instructions: "@callTool wx-lookup-weather {\"city\":\"Bergen\"}\n@showResult"}
		w.provider.Provider = provider.DeterministicProvider{}
		opts := w.options()
		opts.Tools = manager
		w.build(t, opts)

		// Disabled, the tool is not offered: the model's call is an error result it reads.
		run, _ := w.submit(t, "assist", assistantFlow())
		w.settle(t)
		run = w.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateCompleted), run.Reason)
		g.Expect(result(g, run)["output"].(map[string]any)["text"]).To(ContainSubstring("wx-lookup-weather: Error: wx-lookup-weather is not a tool this agent may call"))
		g.Expect(ext.Invocations()).To(BeEmpty())

		w.setTool(g, "wx-lookup-weather", func(d *platformv1.ToolDefinition) { d.Enabled, d.RequiresApproval = true, true })
		run, token := w.submit(t, "assist", assistantFlow())
		w.settle(t)
		run = w.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateActionRequired), run.Reason)
		action, err := w.work.OpenPendingAction(ctx, run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(action.Kind).To(Equal(work.KindApproval))
		g.Expect(action.Prompt).To(ContainSubstring("wx-lookup-weather"))
		g.Expect(action.Call).NotTo(BeNil())
		g.Expect(action.Call.Arguments).To(MatchJSON(`{"city":"Bergen"}`), "the approver sees the complete arguments")
		g.Expect(ext.Invocations()).To(BeEmpty(), "nothing runs before the approval")

		w.answer(t, run, token, work.Answer{Approved: ptr(true)})
		w.settle(t)
		run = w.read(t, run.ID)
		g.Expect(run.State).To(Equal(work.StateCompleted), run.Reason)
		text := result(g, run)["output"].(map[string]any)["text"].(string)
		g.Expect(text).To(HaveSuffix("wx-lookup-weather: " + extension.Forecast("Bergen") + " (asked the weather service with a key of 15 characters)"))
		g.Expect(text).NotTo(ContainSubstring("wk-secret-value"))
		g.Expect(ext.Invocations()).To(Equal(map[string]int{"lookup-weather " + run.ID + "/ask/tool/1": 1}))
		g.Expect(ext.Redemptions()).To(Equal([]extension.Redemption{{Status: 200, ValueLength: 15}}))
		g.Expect(ext.Authorizations()).To(HaveEach("Bearer ext-bearer"))

		calls := w.calls(t, run.ID)
		g.Expect(calls).To(HaveLen(1))
		g.Expect(calls[0]).To(And(HaveField("Status", work.ToolCallCompleted), HaveField("IdempotencyKey", run.ID+"/ask/tool/1"),
			HaveField("DecidedBy", "p1"), HaveField("Executions", 1)))
		types, events := w.eventTypes(t, run.ID)
		g.Expect(types).To(ContainElements("ToolCallRequested", "PendingActionCreated", "ToolCallApproved", "ToolCallStarted", "ToolCallCompleted"))
		for _, e := range events {
			g.Expect(fmt.Sprintf("%+v", e)).NotTo(ContainSubstring("wk-secret-value"))
		}
	})
}
