package httpapi

import (
	"context"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// ModelProvider is a ModelProvider in the spec's envelope.
type ModelProvider struct {
	APIVersion string                             `json:"apiVersion" enum:"platform/v1,platform.dev/v1" doc:"platform/v1 (platform.dev/v1 is accepted too)"`
	Kind       string                             `json:"kind" enum:"ModelProvider"`
	Metadata   ResourceMetadata                   `json:"metadata"`
	Definition platformv1.ModelProviderDefinition `json:"definition"`
	Status     *ModelProviderState                `json:"status,omitempty" readOnly:"true"`
}

// ModelProviderState is the observed state of a ModelProvider, as its last discovery or
// connectivity test left it; reading it never contacts the provider.
type ModelProviderState struct {
	ResourceState
	LastDiscoveryTime *time.Time `json:"lastDiscoveryTime,omitempty" doc:"When models were last discovered"`
	Models            int32      `json:"models" doc:"Number of Models discovered and still present"`
}

func (in ModelProvider) meta() ResourceMetadata { return in.Metadata }

func (in ModelProvider) validate(pathName string) error {
	return envelopeErrors(in.APIVersion, in.Metadata, pathName)
}

func modelProviderFrom(p *platformv1.ModelProvider) ModelProvider {
	return ModelProvider{APIVersion: specAPIVersion, Kind: "ModelProvider", Metadata: metadataFrom(p.ObjectMeta), Definition: p.Definition, Status: modelProviderState(p)}
}

func modelProviderState(p *platformv1.ModelProvider) *ModelProviderState {
	return &ModelProviderState{ResourceState: stateFrom(p.Status.ResourceStatus), LastDiscoveryTime: timeFrom(p.Status.LastDiscoveryTime), Models: p.Status.Models}
}

func (s *Server) registerModelProviders() {
	kindRoutes[*platformv1.ModelProvider, ModelProvider]{
		noun: "model provider", nouns: "model providers", article: "a", id: "model-provider", path: "/api/modelproviders", tag: tagModelProviders,
		newObject:     fresh[platformv1.ModelProvider],
		newList:       func() client.ObjectList { return &platformv1.ModelProviderList{} },
		toBody:        modelProviderFrom,
		setDefinition: func(p *platformv1.ModelProvider, in ModelProvider) { p.Definition = in.Definition },
		referenced:    s.modelProviderReferenced,
		afterDelete:   s.deleteModelsOf,
		deleteDescription: "Refused with 409 while a model profile refers to the provider; the Problem detail names the profile. " +
			"The Models discovered at the provider are deleted with it.",
	}.register(s)

	readOf(s, huma.Operation{
		OperationID: "get-model-provider-status", Path: "/api/modelproviders/{name}/status", Tags: []string{tagModelProviders},
		Summary:     "Read the observed state of a model provider",
		Description: "Conditions and what the last discovery or connectivity test observed; the provider is never contacted.",
	}, fresh[platformv1.ModelProvider], func(_ context.Context, provider *platformv1.ModelProvider) (ModelProviderState, error) {
		return *modelProviderState(provider), nil
	})

	readOf(s, huma.Operation{
		OperationID: "list-model-provider-models", Path: "/api/modelproviders/{name}/models", Tags: []string{tagModelProviders},
		Summary:     "List the models discovered at a model provider",
		Description: "The Model objects of the provider, as the last discovery left them; the provider is never contacted.",
	}, fresh[platformv1.ModelProvider], func(ctx context.Context, provider *platformv1.ModelProvider) (items[Model], error) {
		models, err := s.modelsOf(ctx, provider.Namespace, provider)
		return itemsOf(models), err
	})

	readOf(s, huma.Operation{
		OperationID: "list-model-provider-usages", Path: "/api/modelproviders/{name}/usages", Tags: []string{tagModelProviders},
		Summary:     "List the model profiles and agents that use a model provider",
		Description: "Each model profile that refers to the provider, followed by the agents that select that profile (through names it).",
	}, fresh[platformv1.ModelProvider], func(ctx context.Context, provider *platformv1.ModelProvider) (items[Usage], error) {
		profiles, err := s.profilesOf(ctx, provider)
		if err != nil {
			return items[Usage]{}, err
		}
		agents, err := listNamespace[*platformv1.Agent](ctx, s, provider.Namespace, &platformv1.AgentList{})
		var usages []Usage
		for _, profile := range profiles {
			usages = append(usages, Usage{Kind: "ModelProfile", Name: profile.Name})
			usages = append(usages, agentUsages(agents, profile, true)...)
		}
		return itemsOf(usages), err
	})

	s.registerModelDiscovery()
}

// profilesOf are the model profiles that refer to provider.
func (s *Server) profilesOf(ctx context.Context, provider *platformv1.ModelProvider) ([]*platformv1.ModelProfile, error) {
	profiles, err := listNamespace[*platformv1.ModelProfile](ctx, s, provider.Namespace, &platformv1.ModelProfileList{})
	if err != nil {
		return nil, err
	}
	var out []*platformv1.ModelProfile
	for _, profile := range profiles {
		if string(profile.Definition.Provider.Name) == provider.Name {
			out = append(out, profile)
		}
	}
	return out, nil
}

func (s *Server) modelProviderReferenced(ctx context.Context, provider *platformv1.ModelProvider) error {
	profiles, err := s.profilesOf(ctx, provider)
	if err != nil || len(profiles) == 0 {
		return err
	}
	return referencedBy("Model provider", provider.Name, "model profile", profiles[0].Name)
}

// deleteModelsOf deletes the Models a deleted provider owned.
func (s *Server) deleteModelsOf(ctx context.Context, provider *platformv1.ModelProvider) error {
	return deleteOwned(ctx, s, provider.Namespace, &platformv1.ModelList{}, func(m *platformv1.Model) bool {
		return string(m.Definition.Provider.Name) == provider.Name
	})
}
