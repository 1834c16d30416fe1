// The permissions of the controller manager, generated into the platform-manager ClusterRole in
// config/rbac/role.yaml by `make manifests`. Each reconciler carries the markers of what it reads
// and writes (controllers/<kind>/<kind>_controller.go); this file keeps what the manager itself
// needs (events, the leader election Lease). Every kind has a reconciler now, which only reads
// and writes status; kinds that reconcilers will create or delete themselves (discovered Models
// and Tools, system-managed Direct Agent Flows, seeded Dashboards) get those verbs with the
// reconciler that does it.
//
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

package controllers
