// The permissions of the controller manager, generated into the platform-manager ClusterRole in
// config/rbac/role.yaml by `make manifests`. Markers of a kind move beside its reconciler once it
// exists.
//
// +kubebuilder:rbac:groups=platform.dev,resources=agents,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=agents/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=agents/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

package controllers
