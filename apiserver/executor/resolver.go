package executor

import (
	"context"
	"errors"
	"fmt"
	"platform.dev/platform/internal/resourcenamespace"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/provider"
)

// Errors of flow reference resolution; the service API turns them into Problem Details.
var (
	ErrFlowNotFound    = errors.New("flow not found")
	ErrNoActiveVersion = errors.New("flow has no active version")
	ErrFlowDisabled    = errors.New("flow is disabled")
	ErrAgentNotFound   = errors.New("agent not found")
)

// Resolver reads the Management objects a run pins.
type Resolver interface {
	// FlowVersion is the snapshot and digest of an exact published version. The snapshot may be
	// an informer's (View): it is read, never changed.
	FlowVersion(ctx context.Context, namespace, name, version string) (platformv1.FlowDefinition, string, error)
	// Agent is the current revision of an agent.
	Agent(ctx context.Context, namespace, name string) (provider.Agent, error)
}

// KubeResolver reads Flows, FlowVersions and Agents from the kube API.
// Their active versions, enablement and revisions change: a Client that answers from a cache
// must answer what its process wrote a moment ago (CacheFirst with Writes), so that a version
// activated a moment ago is the one a new run executes.
type KubeResolver struct {
	Client client.Reader
}

// FlowVersion reads a published version of a Flow.
func (r KubeResolver) FlowVersion(ctx context.Context, namespace, name, version string) (platformv1.FlowDefinition, string, error) {
	objectName := name + "-" + strings.ToLower(strings.ReplaceAll(version, "+", "-"))
	if len(validation.IsDNS1123Subdomain(objectName)) != 0 {
		return platformv1.FlowDefinition{}, "", fmt.Errorf("version %s of flow %q: %w", version, name, ErrFlowNotFound)
	}
	// A published version never changes: its snapshot is shared with the informer, not copied.
	v, err := View(ctx, r.Client, client.ObjectKey{Namespace: namespace, Name: objectName}, &platformv1.FlowVersion{})
	if apierrors.IsNotFound(err) || (err == nil && (string(v.Definition.FlowName) != name || string(v.Definition.Version) != version)) {
		return platformv1.FlowDefinition{}, "", fmt.Errorf("version %s of flow %q: %w", version, name, ErrFlowNotFound)
	}
	if err != nil {
		return platformv1.FlowDefinition{}, "", err
	}
	return v.Definition.Snapshot, string(v.Definition.Digest), nil
}

// Agent reads an agent's current revision.
func (r KubeResolver) Agent(ctx context.Context, namespace, name string) (provider.Agent, error) {
	// Only what the run pins is taken of the informer's agent, copied field by field.
	a, err := View(ctx, r.Client, client.ObjectKey{Namespace: namespace, Name: name}, &platformv1.Agent{})
	if apierrors.IsNotFound(err) {
		return provider.Agent{}, fmt.Errorf("agent %q: %w", name, ErrAgentNotFound)
	}
	if err != nil {
		return provider.Agent{}, err
	}
	out := provider.Agent{Name: a.Name, UID: string(a.UID), Revision: a.ResourceVersion, Generation: a.Generation,
		Handler: a.Definition.Handler, Instructions: a.Definition.Instructions}
	for _, t := range a.Definition.Tools {
		out.Tools = append(out.Tools, t.Name)
	}
	if p := a.Definition.ModelProfile; p != nil {
		out.ModelProfile = p.Name
		if out.ModelProfile == "" {
			out.ModelProfile = p.ResourceID
		}
		if p.Namespace != "" {
			ns, err := resourcenamespace.Resolve(ctx, r.Client, namespace, p.Namespace)
			if err != nil {
				return provider.Agent{}, fmt.Errorf("agent %q: the resource namespace %s of its model profile: %w", name, p.Namespace, err)
			}
			out.ModelProfileNamespace = ns
		}
	}
	return out, nil
}

// ResolveReference turns a Flow reference into the exact version a new run executes: version
// itself when given (exact), else the Flow's active version. The Flow must exist and be enabled,
// and the version must be published.
func (r KubeResolver) ResolveReference(ctx context.Context, namespace, name, version string) (string, error) {
	// The Flow is only read: the informer's own object, not a copy.
	flow, err := View(ctx, r.Client, client.ObjectKey{Namespace: namespace, Name: name}, &platformv1.Flow{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("flow %q: %w", name, ErrFlowNotFound)
	}
	if err != nil {
		return "", err
	}
	if flow.Definition.Enabled != nil && !*flow.Definition.Enabled {
		return "", fmt.Errorf("flow %q refuses new runs: %w", name, ErrFlowDisabled)
	}
	if version == "" {
		version = string(flow.Status.ActiveVersion)
		if version == "" {
			return "", fmt.Errorf("flow %q: publish a version with activate, or name an exact version: %w", name, ErrNoActiveVersion)
		}
	}
	if _, _, err := r.FlowVersion(ctx, namespace, name, version); err != nil {
		return "", err
	}
	return version, nil
}
