package httpapi

import (
	"context"

	"github.com/danielgtaylor/huma/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Deployment is what the Runtime plane rebuilds of an Agent from Management state: for now the
// projection of the Agent of the same name.
type Deployment struct {
	Name               string          `json:"name" doc:"Name of the deployment: the name of its Agent"`
	Agent              string          `json:"agent" doc:"The Agent the deployment is rebuilt from"`
	Ready              bool            `json:"ready" doc:"True when the Agent's Ready condition is True"`
	ReadyCondition     *Condition      `json:"readyCondition,omitempty" doc:"The Agent's Ready condition; absent until its reconciler reports one"`
	Provisioning       string          `json:"provisioning,omitempty" enum:"Pending,Provisioned,Failed" doc:"Whether the Runtime plane holds the current generation"`
	Generation         int64           `json:"generation" doc:"metadata.generation of the Agent"`
	ObservedGeneration int64           `json:"observedGeneration" doc:"The generation the Agent's status was computed from"`
	Model              ModelResolution `json:"model" doc:"The model chain of the Agent, resolved from Management state"`
}

func (s *Server) registerDeployments() {
	readOf(s, huma.Operation{
		OperationID: "get-deployment", Path: "/api/deployments/{name}", Tags: []string{tagDeployments},
		Summary: "Read a deployment",
		Description: "Runtime agent instances are rebuilt from Management state; until the flow executor exists, a deployment " +
			"is the projection of the Agent of that name: its readiness, its resolved model chain (never contacting the " +
			"provider) and its generation against the observed one. The runtime instances join this answer with the flow " +
			"executor. 404 when no Agent has the name.",
	}, fresh[platformv1.Agent], func(ctx context.Context, agent *platformv1.Agent) (Deployment, error) {
		model, err := s.resolveAgentModel(ctx, agent)
		ready := readyCondition(agent.Status.Conditions)
		return Deployment{
			Name: agent.Name, Agent: agent.Name, Ready: ready != nil && ready.Status == string(metav1.ConditionTrue), ReadyCondition: ready,
			Provisioning: string(agent.Status.Provisioning), Generation: agent.Generation, ObservedGeneration: agent.Status.ObservedGeneration, Model: model,
		}, err
	})
}
