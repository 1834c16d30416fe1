package management

import (
	"context"

	"github.com/danielgtaylor/huma/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
)

// Agent is an Agent in the spec's envelope.
type Agent struct {
	APIVersion string                     `json:"apiVersion" enum:"platform/v1,platform.dev/v1" doc:"platform/v1 (platform.dev/v1 is accepted too)"`
	Kind       string                     `json:"kind" enum:"Agent"`
	Metadata   httpapi.ResourceMetadata   `json:"metadata"`
	Definition platformv1.AgentDefinition `json:"definition"`
	Status     *AgentStatus               `json:"status,omitempty" readOnly:"true"`
}

// AgentStatus is the observed state of an Agent.
type AgentStatus struct {
	ObservedGeneration int64               `json:"observedGeneration"`
	Conditions         []httpapi.Condition `json:"conditions"`
}

func agentFrom(a *platformv1.Agent) Agent {
	return Agent{
		APIVersion: httpapi.SpecAPIVersion, Kind: "Agent", Metadata: httpapi.MetadataFrom(a.ObjectMeta), Definition: a.Definition,
		Status: &AgentStatus{ObservedGeneration: a.Status.ObservedGeneration, Conditions: httpapi.ConditionsFrom(a.Status.Conditions)},
	}
}

func (in Agent) Meta() httpapi.ResourceMetadata { return in.Metadata }

func (in Agent) Validate(pathName string) error {
	return httpapi.EnvelopeErrors(in.APIVersion, in.Metadata, pathName)
}

func (s *routes) registerAgents() {
	httpapi.KindRoutes[*platformv1.Agent, Agent]{
		Noun: "agent", Nouns: "agents", Article: "an", ID: "agent", Path: "/api/agents", Tag: tagAgents,
		NewObject:     httpapi.Fresh[platformv1.Agent],
		NewList:       func() client.ObjectList { return &platformv1.AgentList{} },
		ToBody:        agentFrom,
		SetDefinition: func(a *platformv1.Agent, in Agent) { a.Definition = in.Definition },
		Referenced:    s.agentReferenced,
		DeleteDescription: "Refused with 409 while a published Entry refers to the agent: the Flow version it pins " +
			"(or, while that version is not published, the Flow of that name) is a Direct Flow with the agent as its " +
			"target or an Orchestration Flow with an Agent step that invokes it. The Problem detail names the published Entry.",
	}.Register(s.Server)

	httpapi.ReadOf(s.Server, huma.Operation{
		OperationID: "get-agent-model", Path: "/api/agents/{name}/model", Tags: []string{tagAgents},
		Summary: "Resolve the model of an agent from Management state",
		Description: "Follows the agent's modelProfile (by name, or by resourceId: the ModelProfile's uid) to its " +
			"ModelProvider and the model id the profile selects, reading only Management objects: the provider is " +
			"never contacted. 404 when the agent does not exist. A broken chain is not an error: the answer is 200 " +
			"with resolved false, the reason (ModelProfileNotFound, ModelProviderNotFound) and a message, and " +
			"whatever part of the chain resolved. ready is the agent's Ready condition as its reconciler reported it.",
	}, httpapi.Fresh[platformv1.Agent], func(ctx context.Context, agent *platformv1.Agent) (AgentModel, error) {
		resolution, err := s.resolveAgentModel(ctx, agent)
		return AgentModel{Agent: agent.Name, ModelResolution: resolution, Ready: httpapi.ReadyCondition(agent.Status.Conditions)}, err
	})
}

// AgentModel is the model of an agent as far as Management state tells it.
type AgentModel struct {
	Agent string `json:"agent" doc:"Name of the agent"`
	ModelResolution
	Ready *httpapi.Condition `json:"ready,omitempty" doc:"The agent's Ready condition; absent until its reconciler reports one"`
}

// agentReferenced refuses the deletion of an agent that a published Entry still runs: through
// the snapshot of the Flow version it pins or, while that version is not published, through the
// current definition of the Flow of that name.
func (s *routes) agentReferenced(ctx context.Context, agent *platformv1.Agent) error {
	flows, err := httpapi.ListNamespace[*platformv1.Flow](ctx, s.Server, agent.Namespace, &platformv1.FlowList{})
	if err != nil {
		return err
	}
	versions, err := httpapi.ListNamespace[*platformv1.FlowVersion](ctx, s.Server, agent.Namespace, &platformv1.FlowVersionList{})
	if err != nil {
		return err
	}
	uses := func(target platformv1.FlowVersionReference) bool {
		for _, version := range versions {
			if version.Definition.FlowName == target.Name && version.Definition.Version == target.Version {
				return invokesAgent(version.Definition.Snapshot, agent.Name)
			}
		}
		// The pinned version is not (or no longer) published: the Flow's definition is all there is.
		for _, flow := range flows {
			if flow.Name == string(target.Name) {
				return invokesAgent(flow.Definition, agent.Name)
			}
		}
		return false
	}
	return s.refusePublishedReference(ctx, agent.Namespace, "Agent", agent.Name, uses)
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

// refusePublishedReference refuses, with 409 naming the referrer, a change to kind/name while a
// PublishedEntry of namespace ns pins a Flow version (its target or its continuation target) for
// which uses is true.
func (s *routes) refusePublishedReference(ctx context.Context, ns, kind, name string, uses func(platformv1.FlowVersionReference) bool) error {
	entries, err := httpapi.ListNamespace[*platformv1.PublishedEntry](ctx, s.Server, ns, &platformv1.PublishedEntryList{})
	if err != nil {
		return err
	}
	for _, entry := range entries {
		targets := []platformv1.FlowVersionReference{entry.Definition.ResolvedTarget}
		if entry.Definition.ContinuationTarget != nil {
			targets = append(targets, *entry.Definition.ContinuationTarget)
		}
		for _, target := range targets {
			if uses(target) {
				return httpapi.ReferencedBy(kind, name, "published entry", entry.Name)
			}
		}
	}
	return nil
}
