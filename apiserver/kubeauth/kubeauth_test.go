package kubeauth_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"platform.dev/platform/apiserver/controlplane"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/kubeauth"
	"platform.dev/platform/apiserver/oidc"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/testenv"
	"platform.dev/platform/test/oidc/oidctest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

const (
	audience    = "https://platform.example.test/api"
	redirectURI = "http://127.0.0.1/callback"
	password    = "Correct-Horse-9!"
)

var agents = schema.GroupVersionResource{Group: "platform.dev", Version: "v1", Resource: "agents"}

// as is a kube client that presents token as a bearer token, as kubectl with a token does.
func as(env *testenv.Env, token string) (kubernetes.Interface, dynamic.Interface) {
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = token
	return kubernetes.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg)
}

func agent(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "platform.dev/v1", "kind": "Agent", "metadata": map[string]any{"name": name},
		"definition": map[string]any{"instructions": "Answer briefly."},
	}}
}

// TestJWTBearerTokensActOnTheKubeAPIAsTheLinkedPrincipal: a JWT of the OpenID Provider for the
// platform's audience, whose exact (iss, sub) is linked, acts as that Principal with its roles; an
// unlinked one is authenticated but may do nothing; one for another audience is refused (401).
func TestJWTBearerTokensActOnTheKubeAPIAsTheLinkedPrincipal(t *testing.T) {
	provider := oidctest.Start(t, oidctest.Options{RedirectURIs: []string{redirectURI}, Resources: []string{audience, "https://other.example.test"}})
	verifier := oidc.NewVerifier(oidc.Config{Authority: provider.Issuer, Audience: audience, ClientID: "platform"})
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		ids := identity.New(s)
		workspaces := &kubeauth.Authorizer{Identity: ids}
		env, err := testenv.Start(ctx, testenv.Options{Tune: func(o *controlplane.Options) {
			o.Authenticators = append(o.Authenticators, (&kubeauth.Authenticator{Identity: ids, JWT: verifier}).Request())
			o.Authorizers = append(o.Authorizers, workspaces)
			o.NamespaceVisibility = workspaces.Visibility
		}})
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = env.Stop() })
		provision := func(ctx context.Context, ws identity.Workspace) error {
			_, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws.RouteName}}, metav1.CreateOptions{})
			return err
		}

		_, admin, home, err := ids.Bootstrap(ctx, identity.BootstrapRequest{Username: "admin", Password: password, TenantName: "Acme", WorkspaceName: "home"}, provision)
		g.Expect(err).NotTo(HaveOccurred())
		other, err := ids.CreateWorkspaceFor(ctx, admin.ID, identity.NewWorkspace{TenantID: home.TenantID, RouteName: "other"}, provision)
		g.Expect(err).NotTo(HaveOccurred())
		alan, _, err := ids.CreateLocalAccountWithAccess(ctx, admin.ID, identity.NewLocalAccount{Username: "alan", Password: password},
			identity.InitialAccess{Workspace: home.ID, Role: identity.RoleMember})
		g.Expect(err).NotTo(HaveOccurred())
		_, _, err = ids.LinkExternalIdentity(ctx, admin.ID, alan.PrincipalID, provider.Issuer, "alan-turing")
		g.Expect(err).NotTo(HaveOccurred())
		for _, ns := range []string{home.RouteName, other.RouteName} {
			_, err := env.Dynamic.Resource(agents).Namespace(ns).Create(ctx, agent("existing"), metav1.CreateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}

		linked, err := provider.SignIn(ctx, "alan-turing", redirectURI, audience)
		g.Expect(err).NotTo(HaveOccurred())
		kube, dyn := as(env, linked.AccessToken)
		review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(review.Status.UserInfo.Username).To(Equal(kubeauth.UserPrefix + alan.PrincipalID))

		list, err := dyn.Resource(agents).Namespace(home.RouteName).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred(), "a Member reads the resources of its workspace")
		g.Expect(list.Items).To(HaveLen(1))
		_, err = dyn.Resource(agents).Namespace(home.RouteName).Create(ctx, agent("mine"), metav1.CreateOptions{})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a Member may not write resources: %v", err)
		_, err = dyn.Resource(agents).Namespace(other.RouteName).List(ctx, metav1.ListOptions{})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "another workspace is out of reach: %v", err)
		namespaces, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(namespaces.Items).To(HaveExactElements(HaveField("Name", home.RouteName)))

		unlinked, err := provider.SignIn(ctx, "stranger", redirectURI, audience)
		g.Expect(err).NotTo(HaveOccurred())
		kube, dyn = as(env, unlinked.AccessToken)
		review, err = kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred(), "an unlinked subject is authenticated")
		g.Expect(review.Status.UserInfo.Username).To(Equal(kubeauth.UnresolvedUser))
		_, err = dyn.Resource(agents).Namespace(home.RouteName).List(ctx, metav1.ListOptions{})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "but may do nothing: %v", err)

		foreign, err := provider.SignIn(ctx, "alan-turing", redirectURI, "https://other.example.test")
		g.Expect(err).NotTo(HaveOccurred())
		_, dyn = as(env, foreign.AccessToken)
		_, err = dyn.Resource(agents).Namespace(home.RouteName).List(ctx, metav1.ListOptions{})
		g.Expect(apierrors.IsUnauthorized(err)).To(BeTrue(), "a token for another audience is refused: %v", err)

		_, dyn = as(env, "platform_pat_not-a-real-token")
		_, err = dyn.Resource(agents).Namespace(home.RouteName).List(ctx, metav1.ListOptions{})
		g.Expect(apierrors.IsUnauthorized(err)).To(BeTrue(), "a malformed PAT is refused: %v", err)
	})
}
