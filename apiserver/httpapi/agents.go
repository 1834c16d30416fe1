package httpapi

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Agent is an Agent in the spec's envelope.
type Agent struct {
	APIVersion string                     `json:"apiVersion" enum:"platform/v1,platform.dev/v1" doc:"platform/v1 (platform.dev/v1 is accepted too)"`
	Kind       string                     `json:"kind" enum:"Agent"`
	Metadata   ResourceMetadata           `json:"metadata"`
	Definition platformv1.AgentDefinition `json:"definition"`
	Status     *AgentStatus               `json:"status,omitempty" readOnly:"true"`
}

// AgentStatus is the observed state of an Agent.
type AgentStatus struct {
	ObservedGeneration int64       `json:"observedGeneration"`
	Conditions         []Condition `json:"conditions"`
}

func agentFrom(a *platformv1.Agent) Agent {
	return Agent{
		APIVersion: specAPIVersion, Kind: "Agent", Metadata: metadataFrom(a.ObjectMeta), Definition: a.Definition,
		Status: &AgentStatus{ObservedGeneration: a.Status.ObservedGeneration, Conditions: conditionsFrom(a.Status.Conditions)},
	}
}

func (in Agent) validate() error {
	var errs field.ErrorList
	if in.APIVersion != manifest.SpecAPIVersion && in.APIVersion != manifest.KubeAPIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), in.APIVersion, []string{manifest.SpecAPIVersion, manifest.KubeAPIVersion}))
	}
	if len(errs) > 0 {
		return fieldErrors(errs)
	}
	return nil
}

type agentOutput struct {
	ETag string `header:"ETag" doc:"The resource's current ETag, for If-Match on the next write"`
	Body Agent
}

type agentListOutput struct {
	Body struct {
		Items []Agent `json:"items"`
	}
}

type agentNameInput struct {
	WorkspaceInput
	Name string `path:"name" maxLength:"253" doc:"Agent name"`
}

func (s *Server) registerAgents() {
	huma.Register(s.api, huma.Operation{
		OperationID: "list-agents", Method: http.MethodGet, Path: "/api/agents", Tags: []string{tagAgents},
		Summary: "List the agents of the workspace", Security: protected,
	}, func(ctx context.Context, in *WorkspaceInput) (*agentListOutput, error) {
		ns, err := s.workspace(ctx, "", in.Workspace)
		if err != nil {
			return nil, err
		}
		list := &platformv1.AgentList{}
		if err := s.kube.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, problem(err)
		}
		out := &agentListOutput{}
		out.Body.Items = make([]Agent, 0, len(list.Items))
		for i := range list.Items {
			out.Body.Items = append(out.Body.Items, agentFrom(&list.Items[i]))
		}
		return out, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "get-agent", Method: http.MethodGet, Path: "/api/agents/{name}", Tags: []string{tagAgents},
		Summary: "Read an agent", Security: protected,
	}, func(ctx context.Context, in *agentNameInput) (*agentOutput, error) {
		agent, err := s.getAgent(ctx, in.Workspace, in.Name)
		if err != nil {
			return nil, err
		}
		return &agentOutput{ETag: etag(agent.ResourceVersion), Body: agentFrom(agent)}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "create-agent", Method: http.MethodPost, Path: "/api/agents", Tags: []string{tagAgents},
		Summary: "Create an agent", Security: protected, DefaultStatus: http.StatusCreated,
	}, func(ctx context.Context, in *struct {
		WorkspaceInput
		Body Agent
	}) (*agentOutput, error) {
		if err := in.Body.validate(); err != nil {
			return nil, err
		}
		ns, err := s.workspace(ctx, "", in.Workspace)
		if err != nil {
			return nil, err
		}
		agent := &platformv1.Agent{ObjectMeta: in.Body.Metadata.objectMeta(ns), Definition: in.Body.Definition}
		if err := s.kube.Create(ctx, agent, client.FieldOwner(fieldManager)); err != nil {
			return nil, problem(err)
		}
		return &agentOutput{ETag: etag(agent.ResourceVersion), Body: agentFrom(agent)}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "replace-agent", Method: http.MethodPut, Path: "/api/agents/{name}", Tags: []string{tagAgents},
		Summary: "Replace an agent's metadata and definition", Security: protected,
		Description: "Idempotent: the same body with the current ETag leaves the agent and its ETag unchanged.",
	}, func(ctx context.Context, in *struct {
		WorkspaceInput
		IfMatchInput
		Name string `path:"name" maxLength:"253" doc:"Agent name"`
		Body Agent
	}) (*agentOutput, error) {
		if err := in.Body.validate(); err != nil {
			return nil, err
		}
		if in.Body.Metadata.Name != in.Name {
			return nil, fieldErrors(field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), in.Body.Metadata.Name, "must match the name in the path")})
		}
		resourceVersion, err := in.requiredResourceVersion()
		if err != nil {
			return nil, err
		}
		agent, err := s.getAgent(ctx, in.Workspace, in.Name)
		if err != nil {
			return nil, err
		}
		if agent.ResourceVersion != resourceVersion {
			return nil, huma.Error412PreconditionFailed("agent " + quote(in.Name) + " was changed since the ETag in If-Match was read; reload it and retry")
		}
		agent.Labels, agent.Annotations, agent.Definition = in.Body.Metadata.Tags, in.Body.Metadata.Annotations, in.Body.Definition
		// The kube update carries the resourceVersion, so a change in between is refused there too.
		if err := s.kube.Update(ctx, agent, client.FieldOwner(fieldManager)); err != nil {
			return nil, problem(err)
		}
		return &agentOutput{ETag: etag(agent.ResourceVersion), Body: agentFrom(agent)}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "delete-agent", Method: http.MethodDelete, Path: "/api/agents/{name}", Tags: []string{tagAgents},
		Summary: "Delete an agent", Security: protected, DefaultStatus: http.StatusNoContent,
	}, func(ctx context.Context, in *struct {
		WorkspaceInput
		IfMatchInput
		Name string `path:"name" maxLength:"253" doc:"Agent name"`
	}) (*struct{}, error) {
		resourceVersion, err := in.requiredResourceVersion()
		if err != nil {
			return nil, err
		}
		agent, err := s.getAgent(ctx, in.Workspace, in.Name)
		if err != nil {
			return nil, err
		}
		err = s.kube.Delete(ctx, agent, client.Preconditions{UID: &agent.UID, ResourceVersion: &resourceVersion})
		return nil, problem(err)
	})
}

func (s *Server) getAgent(ctx context.Context, workspace, name string) (*platformv1.Agent, error) {
	ns, err := s.workspace(ctx, "", workspace)
	if err != nil {
		return nil, err
	}
	agent := &platformv1.Agent{}
	if err := s.kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, agent); err != nil {
		return nil, problem(err)
	}
	return agent, nil
}

const fieldManager = "platform-api"
