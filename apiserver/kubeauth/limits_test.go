package kubeauth_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"platform.dev/platform/apiserver/controlplane"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/kubeauth"
	"platform.dev/platform/apiserver/ratelimit"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/testenv"
	"platform.dev/platform/internal/resourcenamespace"
)

// A personal access token past its workspace's token-requests-per-second on the kube API is
// answered 429 with a Status of reason TooManyRequests and Retry-After (which kubectl and
// client-go wait for), first after its authentication, then before it; the administrator's
// certificate is not limited.
func TestTheKubeAPIRefusesATokenPastItsLimitWith429AndRetryAfter(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		ids := identity.New(s)
		workspaces := &kubeauth.Authorizer{Identity: ids}
		now := time.Now().Truncate(time.Minute).Add(250 * time.Millisecond)
		limits := &kubeauth.Limits{Counter: &ratelimit.Counter{DB: s, Now: func() time.Time { return now }}, Authorizer: workspaces}
		env, err := testenv.Start(ctx, testenv.Options{Tune: func(o *controlplane.Options) {
			o.Authenticators = append(o.Authenticators, (&kubeauth.Authenticator{Identity: ids}).Request())
			o.Authorizers = append(o.Authorizers, workspaces)
			o.NamespaceVisibility = workspaces.Visibility
			o.Limit, o.Prelimit = limits.Authorized, limits.Unauthenticated
			o.PostStart = map[string]func(context.Context, *rest.Config) error{"workspace-namespaces": workspaces.StartNamespaces}
		}})
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = env.Stop() })
		provision := func(ctx context.Context, ws identity.Workspace) error {
			_, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws.RouteName,
				Annotations: map[string]string{resourcenamespace.WorkspaceIDAnnotation: ws.ID, ratelimit.TokenRequestsPerSecondAnnotation: "2",
					ratelimit.TokenRunsPerMinuteAnnotation: "1"}}}, metav1.CreateOptions{})
			return err
		}
		_, admin, home, err := ids.Bootstrap(ctx, identity.BootstrapRequest{Username: "admin", Password: password, TenantName: "Acme", WorkspaceName: "limited"}, provision)
		g.Expect(err).NotTo(HaveOccurred())
		_, token, err := ids.CreatePAT(ctx, admin.ID, identity.NewPAT{PrincipalID: admin.ID, WorkspaceID: home.ID, Name: "kube",
			Permissions: identity.PermissionsOf(identity.PermResourcesRead), ExpiresAt: time.Now().Add(time.Hour)})
		g.Expect(err).NotTo(HaveOccurred())

		cfg := rest.AnonymousClientConfig(env.Config)
		cfg.BearerToken = token
		client, err := rest.HTTPClientFor(cfg)
		g.Expect(err).NotTo(HaveOccurred())
		list := func() (*http.Response, []byte) {
			var resp *http.Response
			g.Eventually(func() error {
				// Until the namespace informer has synced, a namespace is not yet known as a
				// workspace's and is not counted.
				r, err := client.Get(cfg.Host + "/apis/platform.dev/v1/namespaces/" + home.RouteName + "/agents")
				resp = r
				return err
			}).Should(Succeed())
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp, body
		}
		// Until the CRD's storage and the namespace informer are ready, a request may be refused
		// for another reason or not counted.
		g.Eventually(func() string {
			_, body := list()
			return string(body)
		}).WithTimeout(10*time.Second).Should(ContainSubstring("the limit of 2 requests per second with this access token is reached"),
			"2 a second pass, the next is refused")
		for range 2 {
			r, body := list()
			g.Expect(r.StatusCode).To(Equal(http.StatusTooManyRequests), "%s", body)
			g.Expect(r.Header.Get("Retry-After")).To(Equal("1"), "the second's window ends in 750 ms")
			var status metav1.Status
			g.Expect(json.Unmarshal(body, &status)).To(Succeed())
			g.Expect(status.Kind).To(Equal("Status"))
			g.Expect(status.Reason).To(Equal(metav1.StatusReasonTooManyRequests))
			g.Expect(status.Details.RetryAfterSeconds).To(BeNumerically("==", 1))
			g.Expect(status.Message).To(ContainSubstring("requests per second with this access token"))
		}
		_, err = env.Kube.CoreV1().Namespaces().Get(ctx, home.RouteName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred(), "the administrator's certificate is not limited")

		// The Work group refuses to create a WorkItem (work is submitted through the service API;
		// this test's API serves no Work group at all): a refused create starts no run, so it does
		// not use up the token's runs per minute (1 here): a second one is not refused.
		_, submitter, err := ids.CreatePAT(ctx, admin.ID, identity.NewPAT{PrincipalID: admin.ID, WorkspaceID: home.ID, Name: "submitter",
			Permissions: identity.PermissionsOf(identity.PermRunsRead, identity.PermRunsExecute), ExpiresAt: time.Now().Add(time.Hour)})
		g.Expect(err).NotTo(HaveOccurred())
		cfg.BearerToken = submitter
		client, err = rest.HTTPClientFor(cfg)
		g.Expect(err).NotTo(HaveOccurred())
		create := func() (*http.Response, metav1.Status) {
			r, err := client.Post(cfg.Host+"/apis/work.platform.dev/v1/namespaces/"+home.RouteName+"/workitems", "application/json",
				strings.NewReader(`{"apiVersion":"work.platform.dev/v1","kind":"WorkItem","metadata":{"generateName":"w-"}}`))
			g.Expect(err).NotTo(HaveOccurred())
			defer r.Body.Close()
			var status metav1.Status
			body, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(body, &status)
			return r, status
		}
		for attempt := range 2 { // within the token's 2 requests a second
			r, status := create()
			g.Expect(r.StatusCode).NotTo(Equal(http.StatusTooManyRequests), "attempt %d: %v", attempt+1, status)
		}
	})
}
