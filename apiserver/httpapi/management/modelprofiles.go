package management

import (
	"context"

	"github.com/danielgtaylor/huma/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
)

// ModelProfile is a ModelProfile in the spec's envelope.
type ModelProfile struct {
	APIVersion string                            `json:"apiVersion" enum:"platform/v1,platform.dev/v1" doc:"platform/v1 (platform.dev/v1 is accepted too)"`
	Kind       string                            `json:"kind" enum:"ModelProfile"`
	Metadata   httpapi.ResourceMetadata          `json:"metadata"`
	Definition platformv1.ModelProfileDefinition `json:"definition"`
	Status     *ModelProfileState                `json:"status,omitempty" readOnly:"true"`
}

// ModelProfileState is the observed state of a ModelProfile.
type ModelProfileState struct {
	httpapi.ResourceState
	ProviderType string `json:"providerType,omitempty" doc:"Type of the referenced provider, as the reconciler observed it"`
	Model        string `json:"model,omitempty" doc:"Name of the Model the reconciler resolved the profile to"`
}

func (in ModelProfile) Meta() httpapi.ResourceMetadata { return in.Metadata }

func (in ModelProfile) Validate(pathName string) error {
	return httpapi.EnvelopeErrors(in.APIVersion, in.Metadata, pathName)
}

func modelProfileFrom(p *platformv1.ModelProfile) ModelProfile {
	state := &ModelProfileState{ResourceState: httpapi.StateFrom(p.Status.ResourceStatus), ProviderType: string(p.Status.ProviderType)}
	if p.Status.Model != nil {
		state.Model = string(p.Status.Model.Name)
	}
	return ModelProfile{APIVersion: httpapi.SpecAPIVersion, Kind: "ModelProfile", Metadata: httpapi.MetadataFrom(p.ObjectMeta), Definition: p.Definition, Status: state}
}

// ModelResolution is how far Management state resolves a model: model profile, then model
// provider, then the model the profile selects. It never contacts the provider.
type ModelResolution struct {
	Resolved      bool                `json:"resolved" doc:"True when the model profile and its model provider exist"`
	Reason        string              `json:"reason,omitempty" enum:"ModelProfileNotFound,ModelProviderNotFound" doc:"Why resolved is false"`
	Message       string              `json:"message,omitempty" doc:"Why resolved is false, for people"`
	ModelProfile  *ResolvedProfile    `json:"modelProfile,omitempty" doc:"The model profile, when it exists"`
	ModelProvider *ResolvedProvider   `json:"modelProvider,omitempty" doc:"The model provider of the profile, when it exists"`
	ModelID       string              `json:"modelId,omitempty" doc:"The external model id the profile selects; absent means the provider's default model"`
	Model         *DiscoveredModelRef `json:"model,omitempty" doc:"The Model of that id that discovery found at the provider; absent when none was discovered"`
}

// ResolvedProfile identifies the model profile of a resolution.
type ResolvedProfile struct {
	Name string `json:"name"`
	UID  string `json:"uid" doc:"The profile's resource id"`
}

// ResolvedProvider identifies the model provider of a resolution.
type ResolvedProvider struct {
	Name string `json:"name"`
	Type string `json:"type" enum:"OpenAICompatible,AzureOpenAI,Ollama,Deterministic"`
}

// DiscoveredModelRef identifies a discovered Model.
type DiscoveredModelRef struct {
	Name         string `json:"name" doc:"Name of the Model object"`
	Availability string `json:"availability,omitempty" enum:"Available,Missing" doc:"Whether the last discovery still listed it"`
}

// Usage is one object that uses a model profile or a model provider.
type Usage struct {
	Kind      string `json:"kind" enum:"ModelProfile,Agent"`
	Name      string `json:"name"`
	Through   string `json:"through,omitempty" doc:"For an agent using a model provider: the model profile it uses it through"`
	Reference string `json:"reference,omitempty" enum:"name,resourceId" doc:"For an agent: whether it names its model profile by name or by resourceId"`
}

// ModelProfileResolution is the resolution of a model profile, with its Ready condition.
type ModelProfileResolution struct {
	ModelResolution
	Ready *httpapi.Condition `json:"ready,omitempty" doc:"The profile's Ready condition; absent until its reconciler reports one"`
}

func (s *routes) registerModelProfiles() {
	httpapi.KindRoutes[*platformv1.ModelProfile, ModelProfile]{
		Noun: "model profile", Nouns: "model profiles", Article: "a", ID: "model-profile", Path: "/api/modelprofiles", Tag: tagModelProfiles,
		NewObject:     httpapi.Fresh[platformv1.ModelProfile],
		NewList:       func() client.ObjectList { return &platformv1.ModelProfileList{} },
		ToBody:        modelProfileFrom,
		SetDefinition: func(p *platformv1.ModelProfile, in ModelProfile) { p.Definition = in.Definition },
	}.Register(s.Server)

	httpapi.ReadOf(s.Server, huma.Operation{
		OperationID: "get-model-profile-resolution", Path: "/api/modelprofiles/{name}/resolution", Tags: []string{tagModelProfiles},
		Summary: "Resolve a model profile to its provider and model",
		Description: "Reads only Management objects; the provider is never contacted. 404 when the profile does not exist; " +
			"a missing provider is 200 with resolved false and the reason ModelProviderNotFound.",
	}, httpapi.Fresh[platformv1.ModelProfile], func(ctx context.Context, profile *platformv1.ModelProfile) (ModelProfileResolution, error) {
		resolution, err := s.resolveProfile(ctx, profile)
		return ModelProfileResolution{ModelResolution: resolution, Ready: httpapi.ReadyCondition(profile.Status.Conditions)}, err
	})

	httpapi.ReadOf(s.Server, huma.Operation{
		OperationID: "list-model-profile-usages", Path: "/api/modelprofiles/{name}/usages", Tags: []string{tagModelProfiles},
		Summary:     "List the agents that use a model profile",
		Description: "Agents that name the profile in definition.modelProfile, by name or by resourceId (the profile's uid).",
	}, httpapi.Fresh[platformv1.ModelProfile], func(ctx context.Context, profile *platformv1.ModelProfile) (httpapi.Items[Usage], error) {
		agents, err := httpapi.ListNamespace[*platformv1.Agent](ctx, s.Server, profile.Namespace, &platformv1.AgentList{})
		return httpapi.ItemsOf(agentUsages(agents, profile, false)), err
	})
}

// agentUsages are the agents that select profile; through names the profile in each usage.
func agentUsages(agents []*platformv1.Agent, profile *platformv1.ModelProfile, through bool) []Usage {
	var out []Usage
	for _, agent := range agents {
		reference := profileReference(agent.Definition.ModelProfile, profile)
		if reference == "" {
			continue
		}
		usage := Usage{Kind: "Agent", Name: agent.Name, Reference: reference}
		if through {
			usage.Through = profile.Name
		}
		out = append(out, usage)
	}
	return out
}

// profileReference says how ref selects profile: "name", "resourceId", or "" when it does not.
func profileReference(ref *platformv1.ModelProfileReference, profile *platformv1.ModelProfile) string {
	switch {
	case ref == nil:
		return ""
	case ref.Name != "" && ref.Name == profile.Name:
		return "name"
	case ref.ResourceID != "" && ref.ResourceID == string(profile.UID):
		return "resourceId"
	}
	return ""
}

// resolveAgentModel resolves the model profile an agent selects, by name or by resourceId, in the
// agent's workspace.
func (s *routes) resolveAgentModel(ctx context.Context, agent *platformv1.Agent) (ModelResolution, error) {
	ref := agent.Definition.ModelProfile
	if ref == nil {
		return unresolved(platformv1.ModelProfileNotFoundReason, "the agent selects no model profile"), nil
	}
	profiles, err := httpapi.ListNamespace[*platformv1.ModelProfile](ctx, s.Server, agent.Namespace, &platformv1.ModelProfileList{})
	if err != nil {
		return ModelResolution{}, err
	}
	for _, profile := range profiles {
		if profileReference(ref, profile) != "" {
			return s.resolveProfile(ctx, profile)
		}
	}
	if ref.Name != "" {
		return unresolved(platformv1.ModelProfileNotFoundReason, "model profile "+httpapi.Quote(ref.Name)+" not found"), nil
	}
	return unresolved(platformv1.ModelProfileNotFoundReason, "no model profile has the resourceId "+httpapi.Quote(ref.ResourceID)), nil
}

// resolveProfile follows a profile to its provider and to the discovered Model it selects.
func (s *routes) resolveProfile(ctx context.Context, profile *platformv1.ModelProfile) (ModelResolution, error) {
	out := ModelResolution{ModelProfile: &ResolvedProfile{Name: profile.Name, UID: string(profile.UID)}, ModelID: profile.Definition.ModelID}
	providerName := string(profile.Definition.Provider.Name)
	provider := &platformv1.ModelProvider{}
	if err := s.Kube().Get(ctx, client.ObjectKey{Namespace: profile.Namespace, Name: providerName}, provider); err != nil {
		if !apierrors.IsNotFound(err) {
			return ModelResolution{}, httpapi.Problem(err)
		}
		out.Reason, out.Message = platformv1.ModelProviderNotFoundReason, "model provider "+httpapi.Quote(providerName)+" not found"
		return out, nil
	}
	out.Resolved = true
	out.ModelProvider = &ResolvedProvider{Name: provider.Name, Type: string(provider.Definition.Type)}
	models, err := httpapi.ListNamespace[*platformv1.Model](ctx, s.Server, profile.Namespace, &platformv1.ModelList{})
	if err != nil {
		return ModelResolution{}, err
	}
	for _, model := range models {
		if string(model.Definition.Provider.Name) != provider.Name {
			continue
		}
		// Without a model id the profile uses the provider's default model, which only the
		// reconciler knows (status.model).
		chosen := out.ModelID != "" && model.Definition.ModelID == out.ModelID ||
			out.ModelID == "" && profile.Status.Model != nil && string(profile.Status.Model.Name) == model.Name
		if chosen {
			out.ModelID = model.Definition.ModelID
			out.Model = &DiscoveredModelRef{Name: model.Name, Availability: string(model.Status.Availability)}
			break
		}
	}
	return out, nil
}

func unresolved(reason, message string) ModelResolution {
	return ModelResolution{Reason: reason, Message: message}
}
