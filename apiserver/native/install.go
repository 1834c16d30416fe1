// Package native serves the built-in kinds that controllers and kubectl expect from any cluster
// (core v1 Namespaces and Events, coordination.k8s.io/v1 Leases, events.k8s.io/v1 Events, and
// the self reviews behind `kubectl auth can-i` and `kubectl auth whoami`) with
// the generic registry of k8s.io/apiserver and the Go types of k8s.io/api.
package native

import (
	"errors"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// Install adds the native groups to server: the legacy core group under /api and the named
// groups under /apis. visibility, when not nil, narrows namespace lists and watches per caller.
func Install(server *genericapiserver.GenericAPIServer, opts generic.RESTOptionsGetter, visibility NamespaceVisibility) error {
	if server.Authorizer == nil {
		return errors.New("native groups need the server's authorizer for access reviews")
	}
	namespaces, namespaceStatus, namespaceFinalize, err := NewNamespaceStorage(opts)
	if err != nil {
		return err
	}
	namespaces.Visibility = visibility
	coreEvents, err := NewEventStorage(opts, "events", "event", corev1.GroupName)
	if err != nil {
		return err
	}
	core := genericapiserver.NewDefaultAPIGroupInfo(corev1.GroupName, Scheme, ParameterCodec, Codecs)
	core.VersionedResourcesStorageMap["v1"] = map[string]rest.Storage{
		"namespaces":          namespaces,
		"namespaces/status":   namespaceStatus,
		"namespaces/finalize": namespaceFinalize,
		"events":              shortNamed{coreEvents, []string{"ev"}},
	}
	if err := server.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, &core); err != nil {
		return err
	}

	leases, err := NewLeaseStorage(opts)
	if err != nil {
		return err
	}
	coordination := genericapiserver.NewDefaultAPIGroupInfo(coordinationv1.GroupName, Scheme, ParameterCodec, Codecs)
	coordination.VersionedResourcesStorageMap["v1"] = map[string]rest.Storage{"leases": leases}

	events, err := NewEventStorage(opts, "events", "event", eventsv1.GroupName)
	if err != nil {
		return err
	}
	eventsGroup := genericapiserver.NewDefaultAPIGroupInfo(eventsv1.GroupName, Scheme, ParameterCodec, Codecs)
	eventsGroup.VersionedResourcesStorageMap["v1"] = map[string]rest.Storage{"events": shortNamed{events, []string{"ev"}}}

	authentication := genericapiserver.NewDefaultAPIGroupInfo(authenticationv1.GroupName, Scheme, ParameterCodec, Codecs)
	authentication.VersionedResourcesStorageMap["v1"] = map[string]rest.Storage{"selfsubjectreviews": selfSubjectReviewREST{}}
	authorization := genericapiserver.NewDefaultAPIGroupInfo(authorizationv1.GroupName, Scheme, ParameterCodec, Codecs)
	authorization.VersionedResourcesStorageMap["v1"] = map[string]rest.Storage{
		"selfsubjectaccessreviews": &selfSubjectAccessReviewREST{authorizer: server.Authorizer},
	}

	return server.InstallAPIGroups(&coordination, &eventsGroup, &authentication, &authorization)
}

// StorageResourcePrefix places events.k8s.io Events under the same keys as core Events (one
// object, two API views) and every other native resource where kube-apiserver keeps it.
func StorageResourcePrefix(resource schema.GroupResource) (string, bool) {
	switch resource {
	case corev1.Resource("namespaces"), corev1.Resource("events"), eventsv1.Resource("events"), coordinationv1.Resource("leases"):
		return resource.Resource, true
	}
	return "", false
}

// shortNamed adds kubectl short names to a storage.
type shortNamed struct {
	*genericregistry.Store
	shortNames []string
}

func (s shortNamed) ShortNames() []string { return s.shortNames }
