// The permissions of the controller manager, generated into the platform-manager ClusterRole in
// config/rbac/role.yaml by `make manifests`. Markers of a kind move beside its reconciler once it
// exists. Kinds that reconcilers will create or delete themselves (discovered Models and Tools,
// system-managed Direct Agent Flows, seeded Dashboards and RuntimeProfiles) get those verbs with
// their reconciler.
//
// +kubebuilder:rbac:groups=platform.dev,resources=agents;dashboards;entries;flows;flowversions;installedpacks;modelprofiles;modelproviders;models;publishedentries;runtimeprofiles;secrets;sourceregistries;toolproviders;tools;triggers;vaults,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=agents/status;dashboards/status;entries/status;flows/status;flowversions/status;installedpacks/status;modelprofiles/status;modelproviders/status;models/status;publishedentries/status;runtimeprofiles/status;secrets/status;sourceregistries/status;toolproviders/status;tools/status;triggers/status;vaults/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=platform.dev,resources=agents/finalizers;dashboards/finalizers;entries/finalizers;flows/finalizers;flowversions/finalizers;installedpacks/finalizers;modelprofiles/finalizers;modelproviders/finalizers;models/finalizers;publishedentries/finalizers;runtimeprofiles/finalizers;secrets/finalizers;sourceregistries/finalizers;toolproviders/finalizers;tools/finalizers;triggers/finalizers;vaults/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

package controllers
