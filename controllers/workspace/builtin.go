package workspace

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"platform.dev/platform/apis/platform/manifest"
	"platform.dev/platform/apis/platform/ownerscope"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/resourcenamespace"
)

// systemNamespaces belong to the cluster, not to anyone's work: they are never workspaces.
var systemNamespaces = map[string]bool{
	metav1.NamespaceSystem:    true,
	metav1.NamespacePublic:    true,
	corev1.NamespaceNodeLease: true,
}

// IsWorkspace says whether a namespace is an active workspace: any namespace but the cluster's
// own (kube-system, kube-public, kube-node-lease), a workspace's other resource namespaces (a
// Pack's) and the instance's and tenants' own (which hold only their Secrets and Vaults),
// `default` included, while it is not being deleted.
func IsWorkspace(ns *corev1.Namespace) bool {
	return !systemNamespaces[ns.Name] && !resourcenamespace.IsResourceNamespace(ns) && !ownerscope.IsReservedNamespace(ns.Name) &&
		ns.DeletionTimestamp.IsZero() && ns.Status.Phase != corev1.NamespaceTerminating
}

// isBuiltin says whether obj carries the built-in annotation.
func isBuiltin(obj metav1.Object) bool {
	return obj.GetAnnotations()[manifest.BuiltinAnnotation] == "true"
}

// builtinRuntimeProfile is the RuntimeProfile every workspace receives. It is created when
// missing (and so recreated when deleted); once it exists its definition is the workspace's to
// change, and only the built-in annotation is restored.
func builtinRuntimeProfile(namespace string) *platformv1.RuntimeProfile {
	return &platformv1.RuntimeProfile{
		ObjectMeta: metav1.ObjectMeta{
			Name:        platformv1.BuiltinRuntimeProfileName,
			Namespace:   namespace,
			Annotations: map[string]string{manifest.BuiltinAnnotation: "true"},
		},
		Definition: platformv1.RuntimeProfileDefinition{
			DisplayName: "Built-in runtime",
			Description: "Runs agents on the built-in runtime with its default settings",
			Runtime:     platformv1.BuiltinRuntime,
		},
	}
}

// HomeDashboard is the name of the default Dashboard every workspace receives.
const HomeDashboard = "home"

// NewHomeDashboard is the home Dashboard of workspace namespace ns, empty and the default. It is
// created when the workspace has no default Dashboard; the Entries on it are the workspace's to
// choose, and never put back.
func NewHomeDashboard(ns string) *platformv1.Dashboard {
	return &platformv1.Dashboard{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: HomeDashboard, Annotations: map[string]string{manifest.BuiltinAnnotation: "true"}},
		Definition: platformv1.DashboardDefinition{DisplayName: "Home", IsDefault: true},
	}
}
