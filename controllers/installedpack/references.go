package installedpack

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/pack"
	"platform.dev/platform/internal/resourcenamespace"
)

// TriggersTargeting names the Triggers of workspace (in any of its resource namespaces) whose
// target is Flow name of resource namespace rns: a live reference, like a Dashboard's to an
// Entry. A Trigger in resource namespace `default` is named by its name, another as
// `namespace/name`.
func TriggersTargeting(ctx context.Context, c client.Reader, workspace string, rns platformv1.ResourceNamespace, name string) ([]string, error) {
	namespaces, err := resourcenamespace.OfWorkspace(ctx, c, workspace)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ns := range namespaces {
		list := &platformv1.TriggerList{}
		if err := c.List(ctx, list, client.InNamespace(ns.Name)); err != nil {
			return nil, err
		}
		for _, t := range list.Items {
			f := t.Definition.Target.Flow
			if f == nil || string(f.Name) != name || normalize(f.Namespace) != normalize(rns) {
				continue
			}
			if at := resourcenamespace.Of(ns); at != platformv1.DefaultResourceNamespace {
				out = append(out, string(at)+"/"+t.Name)
			} else {
				out = append(out, t.Name)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func normalize(rns platformv1.ResourceNamespace) platformv1.ResourceNamespace {
	if rns == "" {
		return platformv1.DefaultResourceNamespace
	}
	return rns
}

// TriggerRefusal is why an operation whose change set removes Flows that Triggers target may not
// go on ("" when it may): a Trigger is a person's schedule, which no option of a Pack operation
// removes or retargets; the operator does that first. changes are the refused removals.
func TriggerRefusal(ctx context.Context, c client.Reader, workspace string, cs pack.ChangeSet) (string, []pack.Change, error) {
	var on []string
	var changes []pack.Change
	for _, ch := range cs.Changes {
		if ch.Action != pack.ActionRemove || ch.Kind != "Flow" {
			continue
		}
		ts, err := TriggersTargeting(ctx, c, workspace, platformv1.ResourceNamespace(cs.Namespace), ch.Name)
		if err != nil {
			return "", nil, err
		}
		if len(ts) > 0 {
			on = append(on, fmt.Sprintf("Flow %s is the target of Trigger %s", ch.Name, strings.Join(ts, ", ")))
			changes = append(changes, ch)
		}
	}
	if len(on) == 0 {
		return "", nil, nil
	}
	return strings.Join(on, "; ") + ": retarget or delete the Trigger first", changes, nil
}
