package controlplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	noopoteltrace "go.opentelemetry.io/otel/trace/noop"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsoptions "k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	unionauthn "k8s.io/apiserver/pkg/authentication/request/union"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	unionauthz "k8s.io/apiserver/pkg/authorization/union"
	discoveryendpoint "k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/common"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformadmission "platform.dev/platform/apiserver/admission"
	"platform.dev/platform/apiserver/etcd"
	connlimit "platform.dev/platform/apiserver/listener"
	"platform.dev/platform/apiserver/native"
	nativeopenapi "platform.dev/platform/apiserver/native/openapi"
	"platform.dev/platform/apiserver/pki"
	"platform.dev/platform/apiserver/workapi"
)

// Server is a running control plane.
type Server struct {
	// Address is the host:port the kube API listens on.
	Address string
	// LoopbackConfig is the in-process privileged identity, for the platform's own controllers.
	LoopbackConfig *rest.Config
	// ServiceAPIConfig is the loopback identity impersonating ServiceAPIUser: what the service API
	// writes with on its callers' behalf, privileged but held to the platform's admission rules.
	ServiceAPIConfig *rest.Config
	// AdminConfig reaches the API over TLS as the local administrator, as kubectl does.
	AdminConfig *rest.Config
	// PKI locates the CA and the administrator's credential.
	PKI pki.Files

	etcd         *etcd.Server
	loopbackHTTP *http.Client
	cancel       context.CancelFunc
	stopped      chan struct{}
	runErr       error

	stopOnce sync.Once
}

// Start runs etcd (unless external) and the API server, and returns once the server is ready:
// storage reachable, namespaces bootstrapped and built-in CRDs Established.
func Start(ctx context.Context, o Options) (_ *Server, err error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := o.MakeDataDir(); err != nil {
		return nil, err
	}

	// The port is taken first: a busy port fails in milliseconds and leaves no etcd data behind.
	listener, err := net.Listen("tcp", o.KubeAddr)
	if err != nil {
		return nil, fmt.Errorf("kube API: %w", err)
	}
	if o.MaxConnections > 0 {
		// The apiserver's own http.Server already times idle connections (90 s) and headers
		// (32 s) out; the cap keeps idle clients from taking every descriptor meanwhile.
		listener = connlimit.Limit(listener, o.MaxConnections)
	}
	defer func() {
		if err != nil {
			listener.Close()
		}
	}()

	s := &Server{stopped: make(chan struct{})}
	etcdServers := o.EtcdServers
	if len(etcdServers) == 0 {
		if s.etcd, err = etcd.Start(ctx, o.etcdDir(), time.Minute); err != nil {
			return nil, err
		}
		etcdServers = []string{s.etcd.ClientURL()}
	} else if err := checkEtcd(ctx, etcdServers); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && s.etcd != nil {
			s.etcd.Stop()
		}
	}()

	host, _, _ := o.kubeHostPort()
	if s.PKI, err = pki.Ensure(o.pkiDir(), []string{host}); err != nil {
		return nil, fmt.Errorf("certificates in %s: %w", o.pkiDir(), err)
	}

	server, err := newAPIServer(&o, etcdServers, s.PKI, listener)
	if err != nil {
		return nil, err
	}
	s.LoopbackConfig = server.GenericAPIServer.LoopbackClientConfig
	s.ServiceAPIConfig = ServiceAPIConfig(s.LoopbackConfig)
	if s.loopbackHTTP, err = rest.HTTPClientFor(s.LoopbackConfig); err != nil {
		return nil, err
	}
	s.Address = server.GenericAPIServer.SecureServingInfo.Listener.Addr().String()
	s.AdminConfig = AdminRESTConfig(s.PKI, "https://"+s.Address)

	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	prepared := server.GenericAPIServer.PrepareRun()
	go func() {
		defer close(s.stopped)
		s.runErr = prepared.RunWithContext(runCtx)
		if s.etcd != nil {
			s.etcd.Stop()
		}
	}()

	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop shuts the API server down (draining requests) and then etcd, and waits for both.
func (s *Server) Stop() error {
	s.stopOnce.Do(s.cancel)
	<-s.stopped
	return s.runErr
}

// Done is closed once the server has stopped, whatever the reason.
func (s *Server) Done() <-chan struct{} { return s.stopped }

func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		err := s.Ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-s.stopped:
			if s.runErr != nil {
				return s.runErr
			}
			return errors.New("kube API stopped during startup")
		case <-ctx.Done():
			return fmt.Errorf("kube API not ready after 2m: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkEtcd fails fast with the address when an external etcd cluster cannot be reached, instead
// of a server that never becomes ready.
func checkEtcd(ctx context.Context, servers []string) error {
	client, err := clientv3.New(clientv3.Config{Endpoints: servers, DialTimeout: 5 * time.Second, Logger: nopZap()})
	if err != nil {
		return fmt.Errorf("--etcd-servers %v: %w", servers, err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, ep := range servers {
		if _, err := client.Status(ctx, ep); err == nil {
			return nil
		}
	}
	return fmt.Errorf("--etcd-servers %v: no etcd member answered within 10s", servers)
}

// AdminRESTConfig is the local administrator's client configuration for server.
func AdminRESTConfig(files pki.Files, server string) *rest.Config {
	return &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   files.CACert(),
			CertFile: files.AdminCert(),
			KeyFile:  files.AdminKey(),
		},
		QPS:   -1, // no client-side throttling: the server is local and this is its administrator
		Burst: -1,
	}
}

func newAPIServer(o *Options, etcdServers []string, files pki.Files, listener net.Listener) (*apiextensionsapiserver.CustomResourceDefinitions, error) {
	recommended := genericoptions.NewRecommendedOptions(o.EtcdPrefix,
		apiextensionsapiserver.Codecs.LegacyCodec(apiextensionsv1beta1.SchemeGroupVersion, apiextensionsv1.SchemeGroupVersion))
	recommended.Etcd.StorageConfig.Transport.ServerList = etcdServers

	// The listener is made by Start, not by the serving options: they treat port 0 as "do not
	// serve", and a free port is what tests ask for.
	serving := recommended.SecureServing
	serving.Listener = listener
	serving.BindAddress = listener.Addr().(*net.TCPAddr).IP
	serving.BindPort = listener.Addr().(*net.TCPAddr).Port
	serving.ServerCert.CertKey = genericoptions.CertKey{CertFile: files.ServingCert(), KeyFile: files.ServingKey()}

	config := genericapiserver.NewRecommendedConfig(apiextensionsapiserver.Codecs)
	runOptions := genericoptions.NewServerRunOptions()
	// The component versions and feature gates are final here (there are no flags to parse):
	// saying so spares the apiserver's warning that it had to settle them itself.
	if err := runOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, err
	}
	if err := runOptions.ApplyTo(&config.Config); err != nil {
		return nil, err
	}
	config.EffectiveVersion = kubeVersion{config.EffectiveVersion}
	// On shutdown, drain ordinary requests and then close the listener within 2 s, cutting open
	// watches (their clients re-establish them) instead of waiting a full request timeout.
	config.ShutdownSendRetryAfter = true
	if err := recommended.Etcd.ApplyTo(&config.Config); err != nil {
		return nil, err
	}
	if err := serving.ApplyTo(&config.SecureServing, &config.LoopbackClientConfig); err != nil {
		return nil, fmt.Errorf("kube API on %s: %w", o.KubeAddr, err)
	}
	loopback := config.LoopbackClientConfig
	loopback.QPS, loopback.Burst = -1, -1

	caPEM, err := os.ReadFile(files.CACert())
	if err != nil {
		return nil, err
	}
	clientCA, err := dynamiccertificates.NewStaticCAContent("platform-client-ca", caPEM)
	if err != nil {
		return nil, err
	}
	config.SecureServing.ClientCA = clientCA
	config.Authentication.Authenticator = newAuthenticator(clientCA, o.Authenticators)
	if o.Limit != nil || o.Prelimit != nil {
		limit, prelimit := o.Limit, o.Prelimit
		config.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
			if limit != nil {
				h = limit(h)
			}
			h = genericapiserver.DefaultBuildHandlerChain(h, c)
			if prelimit != nil {
				h = prelimit(h)
			}
			return h
		}
	}
	if config.Authorization.Authorizer, err = newAuthorizer(o.Authorizers); err != nil {
		return nil, err
	}

	namer := openapinamer.NewDefinitionNamer(apiextensionsapiserver.Scheme, native.Scheme, workapi.Scheme)
	config.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openAPIDefinitions, namer)
	config.OpenAPIConfig.Info.Title = "platform"
	config.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openAPIDefinitions, namer)
	config.OpenAPIV3Config.Info.Title = "platform"

	kubeClient, err := kubernetes.NewForConfig(loopback)
	if err != nil {
		return nil, err
	}
	config.ClientConfig = loopback
	config.SharedInformerFactory = informers.NewSharedInformerFactory(kubeClient, 10*time.Minute)
	namespaceLifecycle, err := lifecycle.NewLifecycle(sets.New(metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic))
	if err != nil {
		return nil, err
	}
	namespaceLifecycle.SetExternalKubeInformerFactory(config.SharedInformerFactory)
	namespaceLifecycle.SetExternalKubeClientSet(kubeClient)
	if err := namespaceLifecycle.ValidateInitialization(); err != nil {
		return nil, err
	}
	rules := platformadmission.New()
	for _, plugin := range o.Admission {
		if wants, ok := plugin.(initializer.WantsExternalKubeInformerFactory); ok {
			wants.SetExternalKubeInformerFactory(config.SharedInformerFactory)
		}
		if validator, ok := plugin.(admission.InitializationValidator); ok {
			if err := validator.ValidateInitialization(); err != nil {
				return nil, err
			}
		}
	}
	config.AdmissionControl = admission.NewChainHandler(append([]admission.Interface{namespaceLifecycle, rules}, o.Admission...)...)
	config.MergedResourceConfig = apiextensionsapiserver.DefaultAPIResourceConfigSource()

	extensionsConfig := &apiextensionsapiserver.Config{
		GenericConfig: config,
		ExtraConfig: apiextensionsapiserver.ExtraConfig{
			CRDRESTOptionsGetter: apiextensionsoptions.NewCRDRESTOptionsGetter(*recommended.Etcd, config.ResourceTransformers, config.StorageObjectCountTracker),
			ServiceResolver:      noServices{},
			AuthResolverWrapper:  webhook.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, loopback, noopoteltrace.NewTracerProvider()),
		},
	}
	server, err := extensionsConfig.Complete().New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	generic := server.GenericAPIServer

	nativeStorage := recommended.Etcd.StorageConfig
	nativeStorage.Codec = native.Codecs.LegacyCodec(native.Scheme.PrioritizedVersionsAllGroups()...)
	nativeOptions := recommended.Etcd.CreateRESTOptionsGetter(&nativeStorageFactory{genericoptions.SimpleStorageFactory{StorageConfig: nativeStorage}}, config.ResourceTransformers)
	if err := native.Install(generic, nativeOptions, o.NamespaceVisibility); err != nil {
		return nil, err
	}
	for _, install := range o.APIGroups {
		if err := install(generic); err != nil {
			return nil, err
		}
	}

	// The apiextensions server turns root discovery off because kube-apiserver serves it from the
	// aggregator; this server is the whole API, so it serves /apis itself.
	rootDiscovery := discoveryendpoint.WrapAggregatedDiscoveryToHandler(generic.DiscoveryGroupManager, generic.AggregatedDiscoveryGroupManager, generic.AggregatedDiscoveryGroupManager)
	generic.Handler.GoRestfulContainer.Add(rootDiscovery.GenerateWebService("/apis", metav1.APIGroupList{}))
	groupLister, err := newCRDGroupLister(generic.DiscoveryGroupManager, server.Informers.Apiextensions().V1().CustomResourceDefinitions())
	if err != nil {
		return nil, err
	}
	_ = groupLister

	namespaceController, err := native.NewNamespaceController(loopback, config.SharedInformerFactory)
	if err != nil {
		return nil, err
	}
	generic.AddPostStartHookOrDie("platform-namespace-controller", func(ctx genericapiserver.PostStartHookContext) error {
		go namespaceController.Run(ctx)
		return nil
	})
	generic.AddPostStartHookOrDie("platform-bootstrap-namespaces", func(ctx genericapiserver.PostStartHookContext) error {
		return ensureNamespaces(ctx, kubeClient)
	})
	// The rules read through the loopback client once the server serves; before that, a request
	// that needs a read is refused.
	generic.AddPostStartHookOrDie("platform-admission-rules", func(genericapiserver.PostStartHookContext) error {
		reader, err := client.New(loopback, client.Options{Scheme: platformscheme.Scheme, Log: klog.Background().WithName("platform-admission")})
		if err != nil {
			return err
		}
		rules.SetReader(reader)
		return nil
	})
	for name, hook := range o.PostStart {
		generic.AddPostStartHookOrDie("platform-"+name, func(ctx genericapiserver.PostStartHookContext) error {
			return hook(ctx, loopback)
		})
	}
	crdClient, err := apiextensionsclient.NewForConfig(loopback)
	if err != nil {
		return nil, err
	}
	generic.AddPostStartHookOrDie("platform-builtin-crds", func(ctx genericapiserver.PostStartHookContext) error {
		return applyCRDs(ctx, crdClient, o.crds)
	})
	return server, nil
}

// kubeVersion reports the Kubernetes API version this server implements on /version. Without
// build-time stamping of k8s.io/component-base the git version is a placeholder that kubectl
// cannot parse.
type kubeVersion struct {
	basecompatibility.EffectiveVersion
}

func (v kubeVersion) Info() *version.Info {
	info := v.EffectiveVersion.Info()
	if info != nil && strings.Contains(info.GitVersion, "$Format") {
		info.GitVersion = fmt.Sprintf("v%d.%d.0", v.BinaryVersion().Major(), v.BinaryVersion().Minor())
		if build, ok := debug.ReadBuildInfo(); ok {
			for _, dep := range build.Deps {
				// k8s.io/apiserver v0.X.Y implements Kubernetes v1.X.Y.
				if dep.Path == "k8s.io/apiserver" && strings.HasPrefix(dep.Version, "v0.") {
					info.GitVersion = "v1." + strings.TrimPrefix(dep.Version, "v0.")
				}
			}
		}
	}
	return info
}

// systemNamespaces exist in every cluster; controllers and kubectl assume them.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

func ensureNamespaces(ctx context.Context, client kubernetes.Interface) error {
	for _, name := range systemNamespaces {
		for {
			_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{FieldManager: fieldManager})
			if err == nil || apierrors.IsAlreadyExists(err) {
				break
			}
			klog.FromContext(ctx).Info("creating system namespace failed; retrying", "namespace", name, "err", err)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

const fieldManager = "platform-apiserver"

func newAuthenticator(clientCA dynamiccertificates.CAContentProvider, extra []authenticator.Request) authenticator.Request {
	chain := []authenticator.Request{x509request.NewDynamic(clientCA.VerifyOptions, x509request.CommonNameUserConversion)}
	chain = append(chain, extra...)
	authenticated := group.NewAuthenticatedGroupAdder(unionauthn.New(chain...))
	// As in kube-apiserver, a credential that an authenticator rejects is a 401, never an
	// anonymous request; anonymous callers only reach health and version (see bootstrapPolicy).
	return unionauthn.NewFailOnError(authenticated, anonymous.NewAuthenticator(nil))
}

func newAuthorizer(extra []authorizer.Authorizer) (authorizer.Authorizer, error) {
	named := []unionauthz.NamedAuthorizer{
		{AuthorizerName: "platform-identity", Authorizer: platformIdentity{}},
		{AuthorizerName: "administrators", Authorizer: authorizerfactory.NewPrivilegedGroups(pki.AdminGroup)},
		{AuthorizerName: "bootstrap-policy", Authorizer: bootstrapPolicy{}},
	}
	for i, a := range extra {
		named = append(named, unionauthz.NamedAuthorizer{AuthorizerName: "extra-" + strconv.Itoa(i), Authorizer: a})
	}
	return unionauthz.New(named...)
}

// ServiceAPIUser is the kube user the service API writes as on behalf of its callers: in the
// administrators' group, so it may do whatever a caller's permissions allowed it to attempt, but
// not the platform, so the platform's admission rules apply to it as they do to kubectl.
const ServiceAPIUser = "platform:service-api"

// ServiceAPIConfig is loopback impersonating ServiceAPIUser.
func ServiceAPIConfig(loopback *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(loopback)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: ServiceAPIUser, Groups: []string{pki.AdminGroup}}
	return cfg
}

// platformIdentity refuses, before the administrators' group allows it, the impersonation of the
// platform's loopback identity: admission exempts that identity from the platform's rules, so
// claiming it would bypass them.
type platformIdentity struct{}

func (platformIdentity) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.IsResourceRequest() && a.GetResource() == "users" && a.GetName() == user.APIServerUser &&
		(a.GetVerb() == "impersonate" || strings.HasPrefix(a.GetVerb(), "impersonate:")) {
		return authorizer.DecisionDeny, "the platform's own identity cannot be impersonated", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (p platformIdentity) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(p.Authorize(ctx, a))
}

func (platformIdentity) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// bootstrapPolicy grants what kube-apiserver's bootstrap roles grant: anyone, signed in or not,
// may read health and version (system:public-info-viewer); a signed-in caller may also read
// discovery and OpenAPI (system:discovery) and ask what it may do or who it is
// (system:basic-user). Everything else is up to the administrators group and the plugged-in
// authorizers.
type bootstrapPolicy struct{}

var (
	publicPaths    = []string{"/healthz", "/livez", "/readyz", "/version"}
	discoveryPaths = []string{"/api", "/apis", "/openapi"}
	selfReviews    = sets.New("selfsubjectaccessreviews", "selfsubjectreviews", "selfsubjectrulesreviews")
)

func (bootstrapPolicy) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	authenticated := a.GetUser() != nil && slices.Contains(a.GetUser().GetGroups(), user.AllAuthenticated)
	if a.IsResourceRequest() {
		if authenticated && a.GetVerb() == "create" && selfReviews.Has(a.GetResource()) &&
			(a.GetAPIGroup() == "authorization.k8s.io" || a.GetAPIGroup() == "authentication.k8s.io") {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	}
	if a.GetVerb() != "get" {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if underAny(a.GetPath(), publicPaths) || (authenticated && underAny(a.GetPath(), discoveryPaths)) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func underAny(path string, roots []string) bool {
	for _, root := range roots {
		if path == root || strings.HasPrefix(path, root+"/") {
			return true
		}
	}
	return false
}

func (p bootstrapPolicy) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(p.Authorize(ctx, a))
}

func (bootstrapPolicy) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// noServices answers CRD conversion webhooks that name a Service: this control plane serves no
// Services, so such webhooks must use a URL.
type noServices struct{}

func (noServices) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return nil, fmt.Errorf("service %s/%s: services are not served by the embedded control plane; use a URL in the webhook client config", namespace, name)
}

// nativeStorageFactory keeps native objects at kube-apiserver's etcd keys.
type nativeStorageFactory struct {
	genericoptions.SimpleStorageFactory
}

func (f *nativeStorageFactory) ResourcePrefix(resource schema.GroupResource) string {
	if prefix, ok := native.StorageResourcePrefix(resource); ok {
		return prefix
	}
	return f.SimpleStorageFactory.ResourcePrefix(resource)
}

var _ serverstorage.StorageFactory = &nativeStorageFactory{}

func openAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := apiextensionsopenapi.GetOpenAPIDefinitions(ref)
	maps.Copy(defs, nativeopenapi.GetOpenAPIDefinitions(ref))
	return defs
}

// Ready reports whether the kube API and its storage answer, as its /readyz does.
func (s *Server) Ready(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.LoopbackConfig.Host+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := s.loopbackHTTP.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("kube API not ready: %s", resp.Status)
	}
	return nil
}
