package management

import (
	"context"
	"sort"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
)

// Deployment is what the Runtime plane rebuilds of an Agent from Management state: the revision
// that new runs execute, whether it can take them, its model, and the runtime instances that
// runs in flight still hold.
type Deployment struct {
	Name               string             `json:"name" doc:"Name of the deployment: the name of its Agent"`
	Agent              string             `json:"agent" doc:"The Agent the deployment is rebuilt from"`
	Ready              bool               `json:"ready" doc:"True when the Agent's Ready condition is True for its current generation: routing and new runs may use it"`
	NotReadyReason     string             `json:"notReadyReason,omitempty" doc:"Why ready is false, for people"`
	ReadyCondition     *httpapi.Condition `json:"readyCondition,omitempty" doc:"The Agent's Ready condition; absent until its reconciler reports one"`
	Provisioning       string             `json:"provisioning,omitempty" enum:"Pending,Provisioned,Failed" doc:"Whether the Runtime plane holds the current generation"`
	Generation         int64              `json:"generation" doc:"metadata.generation of the Agent"`
	ObservedGeneration int64              `json:"observedGeneration" doc:"The generation the Agent's status was computed from"`
	Live               LiveRevision       `json:"live" doc:"The revision of the Agent that new runs execute"`
	ResolvedModel      *ResolvedModel     `json:"resolvedModel,omitempty" doc:"Where the live revision's model calls go, as its reconciler resolved it; absent while not Ready"`
	Model              ModelResolution    `json:"model" doc:"The model chain of the Agent, resolved from Management state"`
	ActiveRuns         ActiveRuns         `json:"activeRuns" doc:"Runs in flight that use the Agent"`
	Instances          []Instance         `json:"instances" doc:"The runtime instances in flight, one per Agent revision still used by a run; the live one first"`
}

// LiveRevision identifies the current revision of an Agent.
type LiveRevision struct {
	ResourceID string `json:"resourceId" doc:"The Agent's server-generated id"`
	Version    string `json:"version" doc:"Its generation, as Runtime Runs name it"`
	Revision   string `json:"revision" doc:"Its resourceVersion, as FlowRuns pin it"`
}

// ResolvedModel names the provider and model of an agent's calls, never its endpoint or credential.
type ResolvedModel struct {
	ModelProfile string `json:"modelProfile"`
	Provider     string `json:"provider"`
	ProviderType string `json:"providerType"`
	Model        string `json:"model,omitempty" doc:"The external model id; absent means the provider's default model"`
}

// ActiveRuns counts the runs in flight that use an Agent.
type ActiveRuns struct {
	RuntimeRuns int `json:"runtimeRuns" doc:"Pending and Running Runtime Runs (including routed ones)"`
	FlowRuns    int `json:"flowRuns" doc:"Non-terminal FlowRuns that pinned a revision of the Agent"`
}

// Instance is one Agent revision that runs in flight execute.
type Instance struct {
	Revision    string `json:"revision" doc:"The resourceVersion of the Agent revision"`
	Live        bool   `json:"live" doc:"True for the current revision"`
	RuntimeRuns int    `json:"runtimeRuns"`
	FlowRuns    int    `json:"flowRuns"`
}

func (s *routes) registerDeployments() {
	httpapi.ReadOf(s.Server, huma.Operation{
		OperationID: "get-deployment", Path: "/api/deployments/{name}", Tags: []string{tagDeployments},
		Summary: "Read a deployment",
		Description: "Runtime agent instances are rebuilt from Management state and the runs in flight: the Agent's live " +
			"revision, whether it is ready (Ready for its current generation), its resolved model chain (never contacting " +
			"the provider), and per revision still in use the count of active Runtime Runs and FlowRuns. 404 when no Agent " +
			"has the name.",
	}, httpapi.Fresh[platformv1.Agent], func(ctx context.Context, agent *platformv1.Agent) (Deployment, error) {
		model, err := s.resolveAgentModel(ctx, agent)
		if err != nil {
			return Deployment{}, err
		}
		ready, why := httpapi.AgentReadiness(agent)
		out := Deployment{
			Name: agent.Name, Agent: agent.Name, Ready: ready, NotReadyReason: why, ReadyCondition: httpapi.ReadyCondition(agent.Status.Conditions),
			Provisioning: string(agent.Status.Provisioning), Generation: agent.Generation, ObservedGeneration: agent.Status.ObservedGeneration,
			Live:  LiveRevision{ResourceID: string(agent.UID), Version: strconv.FormatInt(agent.Generation, 10), Revision: agent.ResourceVersion},
			Model: model, Instances: []Instance{},
		}
		if m := agent.Status.ResolvedModel; m != nil {
			out.ResolvedModel = &ResolvedModel{ModelProfile: string(m.ModelProfile), Provider: string(m.Provider),
				ProviderType: string(m.ProviderType), Model: m.Model}
		}
		rc, ok := httpapi.RequestContextFrom(ctx)
		if s.Work() == nil || !ok || rc.WorkspaceID == "" {
			return out, nil // no Work store, no runs in flight to rebuild instances from
		}
		activity, err := s.Work().AgentActivity(ctx, rc.WorkspaceID, string(agent.UID))
		if err != nil {
			return out, httpapi.Problem(err)
		}
		live := Instance{Revision: agent.ResourceVersion, Live: true, RuntimeRuns: activity.RuntimeRuns, FlowRuns: activity.FlowRuns[agent.ResourceVersion]}
		out.ActiveRuns.RuntimeRuns = activity.RuntimeRuns
		var earlier []Instance
		for revision, n := range activity.FlowRuns {
			out.ActiveRuns.FlowRuns += n
			if revision != agent.ResourceVersion {
				earlier = append(earlier, Instance{Revision: revision, FlowRuns: n})
			}
		}
		sort.Slice(earlier, func(i, j int) bool { return earlier[i].Revision > earlier[j].Revision })
		if live.RuntimeRuns+live.FlowRuns > 0 || ready {
			out.Instances = append(out.Instances, live)
		}
		out.Instances = append(out.Instances, earlier...)
		return out, nil
	})
}
