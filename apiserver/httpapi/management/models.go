package management

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
)

// Model is a discovered Model in the spec's envelope; the observed, override and effective
// specifications are kept apart.
type Model struct {
	APIVersion string                     `json:"apiVersion" enum:"platform/v1"`
	Kind       string                     `json:"kind" enum:"Model"`
	Metadata   httpapi.ResourceMetadata   `json:"metadata"`
	Definition platformv1.ModelDefinition `json:"definition"`
	Status     ModelState                 `json:"status"`
}

// ModelState is the observed state of a Model.
type ModelState struct {
	httpapi.ResourceState
	Availability           string                         `json:"availability,omitempty" enum:"Available,Missing" doc:"Whether the last discovery listed the model"`
	LastSeenTime           *time.Time                     `json:"lastSeenTime,omitempty" doc:"When discovery last listed the model"`
	ObservedSpecification  *platformv1.ModelSpecification `json:"observedSpecification,omitempty" doc:"What the provider reports about the model"`
	OverrideSpecification  *platformv1.ModelSpecification `json:"overrideSpecification,omitempty" doc:"The provider's specificationOverrides entry for this model id"`
	EffectiveSpecification *platformv1.ModelSpecification `json:"effectiveSpecification,omitempty" doc:"The observed specification with the override applied, intersected with what the adapter and runtime support"`
}

// modelFrom renders m; overrides are the specificationOverrides of its provider.
func modelFrom(m *platformv1.Model, overrides []platformv1.ModelSpecificationOverride) Model {
	out := Model{APIVersion: httpapi.SpecAPIVersion, Kind: "Model", Metadata: httpapi.MetadataFrom(m.ObjectMeta), Definition: m.Definition, Status: ModelState{
		ResourceState: httpapi.StateFrom(m.Status.ResourceStatus), Availability: string(m.Status.Availability), LastSeenTime: timeFrom(m.Status.LastSeenTime),
		ObservedSpecification: m.Status.ObservedSpecification, EffectiveSpecification: m.Status.EffectiveSpecification,
	}}
	for i := range overrides {
		if overrides[i].ModelID == m.Definition.ModelID {
			out.Status.OverrideSpecification = &overrides[i].Specification
		}
	}
	return out
}

func timeFrom(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	utc := t.UTC()
	return &utc
}

func (s *routes) registerModels() {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-models", Method: http.MethodGet, Path: "/api/models", Tags: []string{tagModels},
		Summary:     "List the models of the workspace",
		Description: "The Model inventory: every model that discovery found at the workspace's model providers. Never contacts a provider.",
	}, httpapi.PolicyResourcesRead), func(ctx context.Context, in *httpapi.WorkspaceInput) (*httpapi.ListOutput[Model], error) {
		ns, err := s.Workspace(ctx)
		if err != nil {
			return nil, err
		}
		models, err := s.modelsOf(ctx, ns, nil)
		if err != nil {
			return nil, err
		}
		return httpapi.ItemsOutput(models), nil
	})
}

// modelsOf renders the Models of namespace ns: those of provider, or of every provider when nil.
func (s *routes) modelsOf(ctx context.Context, ns string, provider *platformv1.ModelProvider) ([]Model, error) {
	overrides := map[string][]platformv1.ModelSpecificationOverride{}
	if provider != nil {
		overrides[provider.Name] = provider.Definition.SpecificationOverrides
	} else {
		providers, err := httpapi.ListNamespace[*platformv1.ModelProvider](ctx, s.Server, ns, &platformv1.ModelProviderList{})
		if err != nil {
			return nil, err
		}
		for _, p := range providers {
			overrides[p.Name] = p.Definition.SpecificationOverrides
		}
	}
	models, err := httpapi.ListNamespace[*platformv1.Model](ctx, s.Server, ns, &platformv1.ModelList{})
	if err != nil {
		return nil, err
	}
	var out []Model
	for _, m := range models {
		providerName := string(m.Definition.Provider.Name)
		if provider != nil && providerName != provider.Name {
			continue
		}
		out = append(out, modelFrom(m, overrides[providerName]))
	}
	return out, nil
}
