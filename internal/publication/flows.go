// Package publication writes what publishing produces: immutable FlowVersions, the
// system-managed Direct Agent Flows that normalize Agent-bound Entries, and PublishedEntries. It
// is the one implementation behind the service API's publish routes and the Entry controller's
// automatic publication, and it writes with the platform's own identity, the only one the kube
// API's admission lets create these objects.
package publication

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
)

// FieldOwner is the field manager of what publication writes.
const FieldOwner = "platform-publication"

// Errors of publication; callers test them with errors.As and errors.Is.
var (
	// ErrConflict: what is asked contradicts what is published (an immutable version with
	// another definition, a name taken by an object of another kind of owner).
	ErrConflict = errors.New("conflict")
)

// InvalidError is a draft or a request that cannot be published, with the field paths at fault.
type InvalidError struct {
	Errs field.ErrorList
}

func (e *InvalidError) Error() string { return e.Errs.ToAggregate().Error() }

func invalid(errs ...*field.Error) error { return &InvalidError{Errs: errs} }

// Publisher publishes with the platform's identity.
type Publisher struct {
	// Client writes FlowVersions, PublishedEntries and Direct Agent Flows; it must act as the
	// platform (the control plane's loopback identity).
	Client client.Client
	// Reader reads what publication checks; Client when nil. A controller passes its manager's
	// uncached reader, so that it never decides on a stale cache.
	Reader client.Reader
	// Clock is the time source; time.Now when nil.
	Clock func() time.Time
}

func (p *Publisher) reader() client.Reader {
	if p.Reader != nil {
		return p.Reader
	}
	return p.Client
}

func (p *Publisher) now() metav1.Time {
	if p.Clock != nil {
		return metav1.NewTime(p.Clock().UTC().Truncate(time.Second))
	}
	return metav1.NewTime(time.Now().UTC().Truncate(time.Second))
}

// FlowVersionName is the object name of a version by the FlowVersion convention:
// `<flow>-<version>` with `+` replaced by `-`, folded to lower case; false when that is not a
// valid object name.
func FlowVersionName(flow, version string) (string, bool) {
	name := flow + "-" + strings.ToLower(strings.ReplaceAll(version, "+", "-"))
	return name, len(validation.IsDNS1123Subdomain(name)) == 0
}

// FindFlowVersion finds the published version of a Flow in a kube namespace by its definition
// (flowName and version), not by the naming convention; nil when there is none.
func FindFlowVersion(ctx context.Context, c client.Reader, namespace, flowName string, version platformv1.SemanticVersion) (*platformv1.FlowVersion, error) {
	versions := &platformv1.FlowVersionList{}
	if err := c.List(ctx, versions, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	for i := range versions.Items {
		def := &versions.Items[i].Definition
		if string(def.FlowName) == flowName && def.Version == version {
			return &versions.Items[i], nil
		}
	}
	return nil, nil
}

// GetFlowVersion is FindFlowVersion that first reads the object name every publication gives a
// version (FlowVersionName): one read, from a cache when c has one, instead of a list of the
// namespace's versions; it lists only when that object is not the version (one named otherwise).
func GetFlowVersion(ctx context.Context, c client.Reader, namespace, flowName string, version platformv1.SemanticVersion) (*platformv1.FlowVersion, error) {
	if name, ok := FlowVersionName(flowName, string(version)); ok {
		v := &platformv1.FlowVersion{}
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, v)
		if err == nil && string(v.Definition.FlowName) == flowName && v.Definition.Version == version {
			return v, nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return FindFlowVersion(ctx, c, namespace, flowName, version)
}

// FlowVersionResult is what PublishFlowVersion did.
type FlowVersionResult struct {
	Version *platformv1.FlowVersion
	// Created is false when the same snapshot was published before under that version.
	Created bool
	// ActiveVersion is the Flow's active version after the publication.
	ActiveVersion platformv1.SemanticVersion
}

// PublishFlowVersion writes the immutable FlowVersion of flow's current definition, or finds the
// one published before with the same snapshot, and records the publication on the Flow's status
// (latestVersion for a new version, activeVersion when activate). A version published before
// with another snapshot is ErrConflict: published versions are immutable.
func (p *Publisher) PublishFlowVersion(ctx context.Context, flow *platformv1.Flow, version platformv1.SemanticVersion, activate bool) (FlowVersionResult, error) {
	name, ok := FlowVersionName(flow.Name, string(version))
	if !ok {
		return FlowVersionResult{}, invalid(field.Invalid(field.NewPath("version"), version,
			"with the flow's name it must spell an object name: at most 253 characters, each dot-separated part starting and ending with a letter or digit"))
	}
	snapshot := *flow.Definition.DeepCopy()
	snapshot.Version = version
	// Who publishes the draft is no part of what is published.
	snapshot.Publication = ""
	digest := snapshot.Digest()
	published := &platformv1.FlowVersion{
		ObjectMeta: metav1.ObjectMeta{Namespace: flow.Namespace, Name: name},
		Definition: platformv1.FlowVersionDefinition{
			FlowName: platformv1.ResourceName(flow.Name), Version: version, FlowGeneration: flow.Generation, Digest: digest, Snapshot: snapshot,
		},
	}
	// The embedded control plane has no garbage collector yet; the reference says who owns it.
	if err := controllerutil.SetControllerReference(flow, published, p.Client.Scheme()); err != nil {
		return FlowVersionResult{}, err
	}
	result := FlowVersionResult{Version: published, Created: true}
	err := p.Client.Create(ctx, published, client.FieldOwner(FieldOwner))
	switch {
	case apierrors.IsAlreadyExists(err):
		result.Created = false
		existing := &platformv1.FlowVersion{}
		if err := p.reader().Get(ctx, client.ObjectKey{Namespace: flow.Namespace, Name: name}, existing); err != nil {
			return FlowVersionResult{}, err
		}
		if string(existing.Definition.FlowName) != flow.Name || existing.Definition.Version != version {
			return FlowVersionResult{}, fmt.Errorf("version %s of flow %q cannot be published: its object name %q holds version %s of flow %q: %w",
				version, flow.Name, name, existing.Definition.Version, existing.Definition.FlowName, ErrConflict)
		}
		if existing.Definition.Snapshot.Digest() != digest {
			return FlowVersionResult{}, fmt.Errorf("published versions are immutable: version %s of flow %q was published with another definition; publish a new version: %w",
				version, flow.Name, ErrConflict)
		}
		result.Version = existing
	case err != nil:
		return FlowVersionResult{}, err
	}
	active, err := p.recordFlowPublication(ctx, flow, version, result.Created, activate)
	result.ActiveVersion = active
	return result, err
}

// recordFlowPublication sets the Flow's latest version (for a new version) and active version
// (on activate) through the status subresource, and returns the active version.
func (p *Publisher) recordFlowPublication(ctx context.Context, flow *platformv1.Flow, version platformv1.SemanticVersion, created, activate bool) (platformv1.SemanticVersion, error) {
	current := &platformv1.Flow{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := p.reader().Get(ctx, client.ObjectKeyFromObject(flow), current); err != nil {
			return err
		}
		changed := false
		if created && current.Status.LatestVersion != version {
			current.Status.LatestVersion, changed = version, true
		}
		if activate && current.Status.ActiveVersion != version {
			current.Status.ActiveVersion, changed = version, true
		}
		if !changed {
			return nil
		}
		return p.Client.Status().Update(ctx, current, client.FieldOwner(FieldOwner))
	})
	return current.Status.ActiveVersion, err
}

// DirectAgentFlowVersion is the one version of every Direct Agent Flow: its snapshot holds only
// the agent's name, which never changes, and a run pins the agent's revision when it starts.
const DirectAgentFlowVersion platformv1.SemanticVersion = "1.0.0"

// AgentAnnotation names, on a Direct Agent Flow, the Agent it hands work to.
const AgentAnnotation = "platform/agent"

// directFlowPrefix starts the name of every Direct Agent Flow.
const directFlowPrefix = "direct-"

// maxDirectFlowName keeps `<flow>-<version>` a valid object name.
const maxDirectFlowName = validation.DNS1123SubdomainMaxLength - len("-1.0.0")

// DirectAgentFlowName is the name of the system-managed Direct Agent Flow of an agent:
// `direct-<agent>`, shortened with a hash of the agent's name when that would be too long.
func DirectAgentFlowName(agent string) string {
	name := directFlowPrefix + agent
	if len(name) <= maxDirectFlowName {
		return name
	}
	sum := sha256.Sum256([]byte(agent))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	return strings.TrimRight(name[:maxDirectFlowName-len(suffix)], "-.") + suffix
}

// IsSystemManaged says whether a Flow is one the platform keeps in step with something else (a
// Direct Agent Flow) and that people do not edit.
func IsSystemManaged(f *platformv1.Flow) bool {
	return f.Labels[manifest.SystemManagedLabel] == "true"
}

// EnsureDirectAgentFlow creates, or brings back into shape, the system-managed Direct Agent Flow
// of the agent named agent in kube namespace ns, publishes and activates its one version, and
// returns the exact reference to it. A user Flow that holds the name is ErrConflict, never taken
// over.
func (p *Publisher) EnsureDirectAgentFlow(ctx context.Context, ns string, agent *platformv1.Agent) (platformv1.FlowVersionReference, error) {
	want := platformv1.FlowDefinition{
		FlowKind:    platformv1.DirectFlow,
		DisplayName: truncate(agentTitle(agent), 256),
		Description: "Hands the work of the Entries bound to this agent to it. Managed by the platform.",
		Version:     DirectAgentFlowVersion,
		Enabled:     ptr.To(true),
		Target:      &platformv1.FlowTarget{Kind: platformv1.AgentFlowTarget, ID: platformv1.ResourceName(agent.Name)},
	}
	flow := &platformv1.Flow{}
	key := client.ObjectKey{Namespace: ns, Name: DirectAgentFlowName(agent.Name)}
	err := p.reader().Get(ctx, key, flow)
	switch {
	case apierrors.IsNotFound(err):
		flow = &platformv1.Flow{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name,
				Labels:      map[string]string{manifest.SystemManagedLabel: "true"},
				Annotations: map[string]string{AgentAnnotation: agent.Name}},
			Definition: want,
		}
		if err := p.Client.Create(ctx, flow, client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
			return platformv1.FlowVersionReference{}, err
		} else if err != nil {
			return p.EnsureDirectAgentFlow(ctx, ns, agent)
		}
	case err != nil:
		return platformv1.FlowVersionReference{}, err
	case !IsSystemManaged(flow) || flow.Annotations[AgentAnnotation] != agent.Name:
		return platformv1.FlowVersionReference{}, fmt.Errorf("the Direct Agent Flow of agent %q would be named %q, which a Flow that is not the agent's system-managed one holds; rename that Flow: %w",
			agent.Name, key.Name, ErrConflict)
	case flow.Definition.Digest() != want.Digest():
		// Only the platform writes it; whatever changed it is put back.
		flow.Definition = want
		if err := p.Client.Update(ctx, flow, client.FieldOwner(FieldOwner)); err != nil {
			return platformv1.FlowVersionReference{}, err
		}
	}
	if _, err := p.PublishFlowVersion(ctx, flow, DirectAgentFlowVersion, true); err != nil {
		return platformv1.FlowVersionReference{}, err
	}
	return platformv1.FlowVersionReference{Name: platformv1.ResourceName(flow.Name), Version: DirectAgentFlowVersion}, nil
}

func agentTitle(agent *platformv1.Agent) string {
	if agent.Definition.DisplayName != "" {
		return agent.Definition.DisplayName
	}
	return agent.Name
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
