package installedpack

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/pack"
	"platform.dev/platform/internal/resourcenamespace"
)

// authoredKinds are the kinds of a resource namespace that someone wrote, and that keep a Pack's
// namespace when it is uninstalled. The derived kinds are not among them: a FlowVersion or a
// PublishedEntry goes with its Flow or Entry, a Model or a Tool with its provider.
var authoredKinds = []string{"Agent", "Dashboard", "Entry", "Flow", "ModelProfile", "ModelProvider", "RuntimeProfile",
	"Secret", "ToolProvider", "Trigger", "Vault"}

// maxRemainingListed bounds how many remaining resources are named.
const maxRemainingListed = 8

// Remaining names (as `Kind name`, at most a few) the resources someone wrote that are in kube
// namespace kns, are not being deleted and are not managed by Pack owner (its label).
func Remaining(ctx context.Context, c client.Reader, kns, owner string) ([]string, error) {
	var out []string
	for _, kind := range authoredKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(platformv1.GroupVersion.WithKind(kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(kns)); err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			if o.GetDeletionTimestamp() == nil && o.GetLabels()[pack.PackLabel] != owner && len(out) < maxRemainingListed {
				out = append(out, kind+" "+o.GetName())
			}
		}
	}
	return out, nil
}

// ReleaseNamespace removes the kube namespace of the Pack's resource namespace rns of workspace
// once nothing someone wrote is left in it, and returns what keeps it otherwise (nothing is
// removed then). A namespace that is not that resource namespace of that workspace is never
// touched; one already gone or going is done. live is an uncached reader.
func ReleaseNamespace(ctx context.Context, c client.Client, live client.Reader, workspace string, rns platformv1.ResourceNamespace) ([]string, error) {
	name, err := resourcenamespace.Resolve(ctx, c, workspace, rns)
	if errors.Is(err, resourcenamespace.ErrNotFound) || (err == nil && name == workspace) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// Read live: the resources the uninstall removed a moment ago may still be in a cache.
	kept, err := Remaining(ctx, live, name, string(rns))
	if err != nil || len(kept) > 0 {
		return kept, err
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if err := c.Delete(ctx, ns, client.Preconditions{UID: &ns.UID}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return nil, fmt.Errorf("removing the namespace of %s: %w", rns, err)
	}
	return nil, nil
}
