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
		DeleteDescription: "Refused with 409 while a published Entry refers to the agent: the Flow version it pins " +
			"(or, while that version is not published, the Flow of that name) is a Direct Flow with the agent as its " +
			"target or an Orchestration Flow with an Agent step that invokes it. The Problem detail names the published Entry. " +
			"The rule is the kube API's admission, so kubectl meets it too.",
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
