package admission

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiadmission "k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/resourcenamespace"
)

// systemManagedRefusal says why a caller other than the platform may not make this write to a
// Flow, or "" when it may: a system-managed Flow is neither created, changed nor deleted, and the
// system-managed label is neither set, changed nor removed, by anyone but the platform.
func systemManagedRefusal(a apiadmission.Attributes) string {
	const label = manifest.SystemManagedLabel
	old, oldHas := labelsOf(a.GetOldObject())[label]
	current, has := labelsOf(a.GetObject())[label]
	switch {
	case a.GetOperation() == apiadmission.Create && has:
		return fmt.Sprintf("the label %s is reserved for the Flows the platform manages: only the platform creates a system-managed Flow", label)
	case old == "true":
		return fmt.Sprintf("Flow %q is system-managed: it follows the publication of its Agent-bound Entry and only the platform changes or deletes it", a.GetName())
	case a.GetOperation() == apiadmission.Update && (oldHas != has || old != current):
		return fmt.Sprintf("the label %s is reserved for the Flows the platform manages: only the platform sets, changes or removes it", label)
	}
	return ""
}

// FlowReferrer finds a PublishedEntry of the workspace that pins a version of Flow name of
// namespace ns, as its target or its continuation target, and describes it ("" when none does).
// The platform's own deletes, which admission exempts, check it themselves.
func FlowReferrer(ctx context.Context, c client.Reader, ns, name string) (string, error) {
	return publishedReferrer(ctx, c, ns, func(target platformv1.FlowVersionReference) (bool, error) {
		return string(target.Name) == name, nil
	})
}

// agentReferrer finds a PublishedEntry of the workspace that runs Agent name of namespace ns:
// through the snapshot of a Flow version it pins or, while that version is not published,
// through the current definition of the Flow of that name. Agents are invoked by the Flows of
// their own namespace, so only pinned versions of that namespace are read.
func agentReferrer(ctx context.Context, c client.Reader, ns, name string) (string, error) {
	var versions *platformv1.FlowVersionList
	return publishedReferrer(ctx, c, ns, func(target platformv1.FlowVersionReference) (bool, error) {
		if versions == nil {
			versions = &platformv1.FlowVersionList{}
			if err := c.List(ctx, versions, client.InNamespace(ns)); err != nil {
				return false, err
			}
		}
		for _, v := range versions.Items {
			if v.Definition.FlowName == target.Name && v.Definition.Version == target.Version {
				return invokesAgent(v.Definition.Snapshot, name), nil
			}
		}
		// The pinned version is not (or no longer) published: the Flow's definition is all there is.
		flow := &platformv1.Flow{}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: string(target.Name)}, flow)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return invokesAgent(flow.Definition, name), nil
	})
}

// invokesAgent says whether a Flow definition hands work to the agent: as the target of a Direct
// Flow or in an Agent step of an Orchestration Flow.
func invokesAgent(definition platformv1.FlowDefinition, agent string) bool {
	if target := definition.Target; target != nil && target.Kind == platformv1.AgentFlowTarget && string(target.ID) == agent {
		return true
	}
	for _, step := range definition.Steps {
		if step.Type == platformv1.AgentStep && step.Agent != nil && string(step.Agent.Name) == agent {
			return true
		}
	}
	return false
}

// publishedReferrer finds a PublishedEntry, in any resource namespace of the workspace of ns,
// with a pinned Flow version in ns for which uses is true. It reads the PublishedEntries of that
// workspace only.
func publishedReferrer(ctx context.Context, c client.Reader, ns string, uses func(platformv1.FlowVersionReference) (bool, error)) (string, error) {
	workspace, err := resourcenamespace.WorkspaceOfName(ctx, c, ns)
	if err != nil {
		return "", err
	}
	namespaces, err := resourcenamespace.OfWorkspace(ctx, c, workspace)
	if err != nil {
		return "", err
	}
	for _, namespace := range namespaces {
		entryNamespace := namespace.Name
		entries := &platformv1.PublishedEntryList{}
		if err := c.List(ctx, entries, client.InNamespace(entryNamespace)); err != nil {
			return "", err
		}
		for _, entry := range entries.Items {
			targets := []platformv1.FlowVersionReference{entry.Definition.ResolvedTarget}
			if entry.Definition.ContinuationTarget != nil {
				targets = append(targets, *entry.Definition.ContinuationTarget)
			}
			for _, target := range targets {
				// A reference names a resource namespace of the entry's own workspace, never another.
				if resourcenamespace.KubeName(workspace, target.Namespace) != ns {
					continue
				}
				used, err := uses(target)
				if err != nil {
					return "", err
				}
				if used {
					return describe("published entry", entry.Name, entryNamespace, ns), nil
				}
			}
		}
	}
	return "", nil
}

// modelProviderReferrer finds a ModelProfile of namespace ns that uses Model provider name.
func modelProviderReferrer(ctx context.Context, c client.Reader, ns, name string) (string, error) {
	profiles := &platformv1.ModelProfileList{}
	if err := c.List(ctx, profiles, client.InNamespace(ns)); err != nil {
		return "", err
	}
	for _, profile := range profiles.Items {
		if string(profile.Definition.Provider.Name) == name {
			return describe("model profile", profile.Name, ns, ns), nil
		}
	}
	return "", nil
}

// describe names a referrer; its namespace only when it is not the one of the referred object.
func describe(kind, name, namespace, from string) string {
	if namespace == from {
		return fmt.Sprintf("%s %q", kind, name)
	}
	return fmt.Sprintf("%s %q of namespace %q", kind, name, namespace)
}
