package controlplane_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"testing"
	"testing/fstest"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"platform.dev/platform/apiserver/controlplane"
	"platform.dev/platform/apiserver/testenv"
	"platform.dev/platform/crds"
)

var agents = schema.GroupVersionResource{Group: "platform.dev", Version: "v1", Resource: "agents"}

// shared is one control plane for the tests that do not restart or reconfigure it.
var shared *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if shared, err = testenv.Start(context.Background(), testenv.Options{}); err != nil {
		panic(err)
	}
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

func TestDiscoveryListsNativeGroupsCRDGroupsAndTheLegacyCoreGroup(t *testing.T) {
	g := NewWithT(t)
	groups, resources, err := shared.Kube.Discovery().ServerGroupsAndResources()
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, group := range groups {
		names = append(names, group.Name)
	}
	g.Expect(names).To(ContainElements("", "apiextensions.k8s.io", "coordination.k8s.io", "events.k8s.io", "platform.dev"))

	served := map[string]bool{}
	for _, list := range resources {
		for _, r := range list.APIResources {
			served[list.GroupVersion+"/"+r.Name] = true
		}
	}
	for _, want := range []string{"v1/namespaces", "v1/events", "coordination.k8s.io/v1/leases", "events.k8s.io/v1/events",
		"apiextensions.k8s.io/v1/customresourcedefinitions", "platform.dev/v1/agents"} {
		g.Expect(served).To(HaveKey(want))
	}
}

func TestUnaggregatedRootDiscoveryFollowsCRDsAsTheyComeAndGo(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	crd := gadgetCRD("v1")
	_, err := shared.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	legacyGroups := func() []string {
		// Without the aggregated Accept header, as older clients ask.
		body, err := shared.Kube.Discovery().RESTClient().Get().AbsPath("/apis").SetHeader("Accept", "application/json").DoRaw(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		var list metav1.APIGroupList
		g.Expect(json.Unmarshal(body, &list)).To(Succeed())
		var names []string
		for _, group := range list.Groups {
			names = append(names, group.Name)
		}
		return names
	}
	g.Eventually(legacyGroups).WithTimeout(10 * time.Second).Should(ContainElement("gadgets.test"))

	g.Expect(shared.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(legacyGroups).WithTimeout(30 * time.Second).ShouldNot(ContainElement("gadgets.test"))
}

func TestOpenAPIDocumentsCoverNativeKindsAndCRDs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	v2, err := shared.Kube.Discovery().RESTClient().Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/json").DoRaw(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	var doc struct {
		Definitions map[string]any `json:"definitions"`
	}
	g.Expect(json.Unmarshal(v2, &doc)).To(Succeed())
	g.Expect(doc.Definitions).To(HaveKey("io.k8s.api.core.v1.Namespace"))
	g.Expect(doc.Definitions).To(HaveKey("io.k8s.api.coordination.v1.Lease"))
	g.Expect(doc.Definitions).To(HaveKey("dev.platform.v1.Agent"))

	paths, err := shared.Kube.Discovery().OpenAPIV3().Paths()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(paths).To(HaveKey("api/v1"))
	g.Expect(paths).To(HaveKey("apis/coordination.k8s.io/v1"))
	g.Expect(paths).To(HaveKey("apis/platform.dev/v1"))
}

func TestObjectsCannotBeCreatedInANamespaceThatDoesNotExist(t *testing.T) {
	g := NewWithT(t)
	_, err := shared.Kube.CoordinationV1().Leases("no-such-namespace").Create(context.Background(),
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}}, metav1.CreateOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`namespaces "no-such-namespace" not found`))
}

func TestDeletingANamespaceRemovesItsContentAndThenTheNamespace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, err := shared.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ns.Status.Phase).To(Equal(corev1.NamespaceActive))
	g.Expect(ns.Labels).To(HaveKeyWithValue(corev1.LabelMetadataName, "doomed"))

	_, err = shared.Kube.CoordinationV1().Leases("doomed").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	agent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "platform.dev/v1", "kind": "Agent",
		"metadata":   map[string]any{"name": "a"},
		"definition": map[string]any{"displayName": "A"},
	}}
	_, err = shared.Dynamic.Resource(agents).Namespace("doomed").Create(ctx, agent, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(shared.Kube.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{})).To(Succeed())
	terminating, err := shared.Kube.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
	if err == nil {
		g.Expect(terminating.Status.Phase).To(Equal(corev1.NamespaceTerminating))
		_, err = shared.Kube.CoordinationV1().Leases("doomed").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "creating in a terminating namespace: %v", err)
	}

	g.Eventually(func() bool {
		_, err := shared.Kube.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(30 * time.Second).Should(BeTrue())
	leases, err := shared.Kube.CoordinationV1().Leases("doomed").List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(leases.Items).To(BeEmpty())
	list, err := shared.Dynamic.Resource(agents).Namespace("doomed").List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list.Items).To(BeEmpty())
}

func TestSystemNamespacesExistAndCannotBeDeleted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		_, err := shared.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred(), name)
	}
	err := shared.Kube.CoreV1().Namespaces().Delete(ctx, "default", metav1.DeleteOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
}

func TestAnonymousCallersReachOnlyHealthAndVersion(t *testing.T) {
	g := NewWithT(t)
	anonymous := rest.AnonymousClientConfig(shared.Config)
	client, err := rest.HTTPClientFor(anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	status := func(path string) int {
		resp, err := client.Get(anonymous.Host + path)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		return resp.StatusCode
	}
	g.Expect(status("/readyz")).To(Equal(http.StatusOK))
	g.Expect(status("/livez")).To(Equal(http.StatusOK))
	g.Expect(status("/version")).To(Equal(http.StatusOK))
	g.Expect(status("/api/v1/namespaces")).To(Equal(http.StatusForbidden))
	g.Expect(status("/apis")).To(Equal(http.StatusForbidden), "discovery is for signed-in callers")
	g.Expect(status("/apis/platform.dev/v1/agents")).To(Equal(http.StatusForbidden))
}

// A token authenticator and an authorizer that lets "reader" only list namespaces stand in for
// the identity plane, which plugs in the same way.
func TestAuthenticationAndAuthorizationArePluggable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env, err := testenv.Start(ctx, testenv.Options{Tune: func(o *controlplane.Options) {
		o.Authenticators = append(o.Authenticators, staticToken{"reader-token": "reader"})
		o.Authorizers = append(o.Authorizers, listNamespacesOnly{})
	}})
	g.Expect(err).NotTo(HaveOccurred())
	defer env.Stop()

	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = "reader-token"
	reader, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = reader.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = reader.Discovery().ServerGroups()
	g.Expect(err).NotTo(HaveOccurred(), "signed-in callers read discovery")
	_, err = reader.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`User "reader"`))

	// kubectl auth can-i and whoami answer with the same authenticator and authorizer.
	canI := func(verb string) bool {
		review, err := reader.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: "namespaces"}},
		}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return review.Status.Allowed
	}
	g.Expect(canI("list")).To(BeTrue())
	g.Expect(canI("create")).To(BeFalse())
	who, err := reader.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(who.Status.UserInfo.Username).To(Equal("reader"))

	cfg.BearerToken = "wrong-token"
	stranger, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = stranger.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	g.Expect(apierrors.IsUnauthorized(err)).To(BeTrue(), "a wrong token is refused, not treated as anonymous: %v", err)
}

func TestBuiltinCRDsAreUpdatedInPlaceAtEveryStart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	start := func(version string) *testenv.Env {
		env, err := testenv.Start(ctx, testenv.Options{Dir: dir, Tune: func(o *controlplane.Options) {
			o.CRDs = crdFS(gadgetCRD(version))
		}})
		g.Expect(err).NotTo(HaveOccurred())
		return env
	}
	env := start("v1")
	crd, err := env.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "gadgets.gadgets.test", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	uid := crd.UID
	g.Expect(env.StopKeepData()).To(Succeed())

	// The "upgrade" adds a version; the start returns only once it is Established.
	env = start("v2")
	defer env.StopKeepData()
	crd, err = env.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "gadgets.gadgets.test", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(crd.UID).To(Equal(uid), "updated, not recreated")
	g.Expect(crd.Spec.Versions).To(HaveLen(2))
	_, err = env.Kube.Discovery().ServerResourcesForGroupVersion("gadgets.test/v2")
	g.Expect(err).NotTo(HaveOccurred())
}

func TestStartFailsClearlyOnABuiltinCRDThatDoesNotDecode(t *testing.T) {
	g := NewWithT(t)
	_, err := controlplane.Start(context.Background(), controlplane.Options{
		DataDir:  t.TempDir(),
		KubeAddr: "127.0.0.1:0",
		CRDs:     fstest.MapFS{"broken.yaml": {Data: []byte("kind: CustomResourceDefinition\nspec: [not, a, map]\n")}},
	})
	g.Expect(err).To(MatchError(ContainSubstring("built-in CRD broken.yaml")))
}

func TestTheEmbeddedCRDsDecode(t *testing.T) {
	g := NewWithT(t)
	o := controlplane.Options{DataDir: t.TempDir(), CRDs: crds.FS}
	g.Expect(o.Validate()).To(Succeed())
}

func gadgetCRD(versions ...string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.gadgets.test"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "gadgets.test",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Gadget", ListKind: "GadgetList", Plural: "gadgets", Singular: "gadget"},
			Scope: apiextensionsv1.NamespaceScoped,
		},
	}
	if len(versions) == 1 && versions[0] == "v2" {
		versions = []string{"v1", "v2"}
	}
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: i == 0,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", XPreserveUnknownFields: ptr.To(true),
			}},
		})
	}
	return crd
}

func crdFS(crd *apiextensionsv1.CustomResourceDefinition) fstest.MapFS {
	data, err := json.Marshal(crd)
	if err != nil {
		panic(err)
	}
	return fstest.MapFS{"gadgets.yaml": {Data: data}}
}

type staticToken map[string]string

func (s staticToken) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	const prefix = "Bearer "
	header := req.Header.Get("Authorization")
	if len(header) <= len(prefix) {
		return nil, false, nil
	}
	name, ok := s[header[len(prefix):]]
	if !ok {
		return nil, false, errors.New("invalid bearer token")
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: name, Groups: []string{user.AllAuthenticated}}}, true, nil
}

type listNamespacesOnly struct{}

func (listNamespacesOnly) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == "reader" && a.IsResourceRequest() && a.GetResource() == "namespaces" && a.GetVerb() == "list" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (l listNamespacesOnly) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(l.Authorize(ctx, a))
}

func (listNamespacesOnly) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
