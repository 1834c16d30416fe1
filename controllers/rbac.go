// The permissions of the controller manager, generated into the platform-manager ClusterRole in
// config/rbac/role.yaml by `make manifests`. Each reconciler carries the markers of what it reads
// and writes (controllers/<kind>/<kind>_controller.go); this file keeps what the manager itself
// needs (events, the leader election Lease) and the kinds that have no reconciler yet. Kinds that
// reconcilers will create or delete themselves (discovered Models and Tools, system-managed
// Direct Agent Flows, seeded Dashboards) get those verbs with their reconciler.
//
// +kubebuilder:rbac:groups=platform.dev,resources=dashboards;entries;flowversions;installedpacks;models;publishedentries;secrets;sourceregistries;toolproviders;tools;triggers;vaults,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=dashboards/status;entries/status;flowversions/status;installedpacks/status;models/status;publishedentries/status;secrets/status;sourceregistries/status;toolproviders/status;tools/status;triggers/status;vaults/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=dashboards/finalizers;entries/finalizers;flowversions/finalizers;installedpacks/finalizers;models/finalizers;publishedentries/finalizers;secrets/finalizers;sourceregistries/finalizers;toolproviders/finalizers;tools/finalizers;triggers/finalizers;vaults/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

package controllers
