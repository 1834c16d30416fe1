package management

import (
	"context"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
)

// ModelProvider is a ModelProvider in the spec's envelope.
type ModelProvider struct {
	APIVersion string                             `json:"apiVersion" enum:"platform/v1,platform.dev/v1" doc:"platform/v1 (platform.dev/v1 is accepted too)"`
	Kind       string                             `json:"kind" enum:"ModelProvider"`
	Metadata   httpapi.ResourceMetadata           `json:"metadata"`
	Definition platformv1.ModelProviderDefinition `json:"definition"`
	Status     *ModelProviderState                `json:"status,omitempty" readOnly:"true"`
}

// ModelProviderState is the observed state of a ModelProvider, as its last discovery or
// connectivity test left it; reading it never contacts the provider.
type ModelProviderState struct {
	httpapi.ResourceState
	LastDiscoveryTime *time.Time `json:"lastDiscoveryTime,omitempty" doc:"When models were last discovered"`
	Models            int32      `json:"models" doc:"Number of Models discovered and still present"`
}

func (in ModelProvider) Meta() httpapi.ResourceMetadata { return in.Metadata }

func (in ModelProvider) Validate(pathName string) error {
	return httpapi.EnvelopeErrors(in.APIVersion, in.Metadata, pathName)
}

func modelProviderFrom(p *platformv1.ModelProvider) ModelProvider {
	return ModelProvider{APIVersion: httpapi.SpecAPIVersion, Kind: "ModelProvider", Metadata: httpapi.MetadataFrom(p.ObjectMeta), Definition: p.Definition, Status: modelProviderState(p)}
}

func modelProviderState(p *platformv1.ModelProvider) *ModelProviderState {
	return &ModelProviderState{ResourceState: httpapi.StateFrom(p.Status.ResourceStatus), LastDiscoveryTime: timeFrom(p.Status.LastDiscoveryTime), Models: p.Status.Models}
}

func (s *routes) registerModelProviders() {
	httpapi.KindRoutes[*platformv1.ModelProvider, ModelProvider]{
		Noun: "model provider", Nouns: "model providers", Article: "a", ID: "model-provider", Path: "/api/modelproviders", Tag: tagModelProviders,
		NewObject:     httpapi.Fresh[platformv1.ModelProvider],
		NewList:       func() client.ObjectList { return &platformv1.ModelProviderList{} },
		ToBody:        modelProviderFrom,
		SetDefinition: func(p *platformv1.ModelProvider, in ModelProvider) { p.Definition = in.Definition },
		AfterDelete:   s.deleteModelsOf,
		DeleteDescription: "Refused with 409 while a model profile refers to the provider; the Problem detail names the profile " +
			"(the rule is the kube API's admission, so kubectl meets it too). " +
			"The Models discovered at the provider are deleted with it.",
	}.Register(s.Server)

	httpapi.ReadOf(s.Server, huma.Operation{
		OperationID: "get-model-provider-status", Path: "/api/modelproviders/{name}/status", Tags: []string{tagModelProviders},
		Summary:     "Read the observed state of a model provider",
		Description: "Conditions and what the last discovery or connectivity test observed; the provider is never contacted.",
	}, httpapi.Fresh[platformv1.ModelProvider], func(_ context.Context, provider *platformv1.ModelProvider) (ModelProviderState, error) {
		return *modelProviderState(provider), nil
	})

	httpapi.ReadOf(s.Server, huma.Operation{
		OperationID: "list-model-provider-models", Path: "/api/modelproviders/{name}/models", Tags: []string{tagModelProviders},
		Summary:     "List the models discovered at a model provider",
		Description: "The Model objects of the provider, as the last discovery left them; the provider is never contacted.",
	}, httpapi.Fresh[platformv1.ModelProvider], func(ctx context.Context, provider *platformv1.ModelProvider) (httpapi.Items[Model], error) {
		models, err := s.modelsOf(ctx, provider.Namespace, provider)
		return httpapi.ItemsOf(models), err
	})

	httpapi.ReadOf(s.Server, huma.Operation{
		OperationID: "list-model-provider-usages", Path: "/api/modelproviders/{name}/usages", Tags: []string{tagModelProviders},
		Summary:     "List the model profiles and agents that use a model provider",
		Description: "Each model profile that refers to the provider, followed by the agents that select that profile (through names it).",
	}, httpapi.Fresh[platformv1.ModelProvider], func(ctx context.Context, provider *platformv1.ModelProvider) (httpapi.Items[Usage], error) {
		profiles, err := s.profilesOf(ctx, provider)
		if err != nil {
			return httpapi.Items[Usage]{}, err
		}
		agents, err := httpapi.ListNamespace[*platformv1.Agent](ctx, s.Server, provider.Namespace, &platformv1.AgentList{})
		var usages []Usage
		for _, profile := range profiles {
			usages = append(usages, Usage{Kind: "ModelProfile", Name: profile.Name})
			usages = append(usages, agentUsages(agents, profile, true)...)
		}
		return httpapi.ItemsOf(usages), err
	})

	s.registerModelDiscovery()
}

// profilesOf are the model profiles that refer to provider.
func (s *routes) profilesOf(ctx context.Context, provider *platformv1.ModelProvider) ([]*platformv1.ModelProfile, error) {
	profiles, err := httpapi.ListNamespace[*platformv1.ModelProfile](ctx, s.Server, provider.Namespace, &platformv1.ModelProfileList{})
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

// deleteModelsOf deletes the Models a deleted provider owned.
func (s *routes) deleteModelsOf(ctx context.Context, provider *platformv1.ModelProvider) error {
	return httpapi.DeleteOwned(ctx, s.Server, provider.Namespace, &platformv1.ModelList{}, func(m *platformv1.Model) bool {
		return string(m.Definition.Provider.Name) == provider.Name
	})
}
