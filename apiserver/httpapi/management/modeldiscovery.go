package management

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/provider"
)

// ModelRefresh reports what one discovery changed in the provider's Models.
type ModelRefresh struct {
	Created    int `json:"created" doc:"Models the provider listed for the first time"`
	Updated    int `json:"updated" doc:"Models listed again whose observed or effective specification changed"`
	Unchanged  int `json:"unchanged" doc:"Models listed again, unchanged"`
	Missing    int `json:"missing" doc:"Models the provider no longer lists (kept, with availability Missing)"`
	Reappeared int `json:"reappeared" doc:"Models that were Missing and are listed again"`
	Total      int `json:"total" doc:"Models of the provider after the refresh: created + updated + unchanged + reappeared + missing"`
}

// ModelProviderTest is the result of a successful connectivity test.
type ModelProviderTest struct {
	Reachable           bool  `json:"reachable" doc:"The endpoint answered the model list with the configured credential"`
	Models              int   `json:"models" doc:"Number of models the endpoint lists"`
	LatencyMilliseconds int64 `json:"latencyMilliseconds" doc:"Time the model list took"`
}

func (s *routes) registerModelDiscovery() {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "refresh-model-provider-models", Method: http.MethodPost, Path: "/api/modelproviders/{name}/models/refresh",
		Tags: []string{tagModelProviders}, Summary: "Discover the models of a model provider",
		Description: "Lists the models at the provider's endpoint and reconciles the provider's Model objects: new ones are " +
			"created, listed ones are Available with their observed and effective specifications, unlisted ones become Missing. " +
			"An endpoint that fails or refuses the credential is 502, one that does not answer in time 504.",
		Errors: []int{http.StatusNotFound, http.StatusBadGateway, http.StatusGatewayTimeout},
	}, httpapi.PolicyResourcesWrite), func(ctx context.Context, in *httpapi.NameInput) (*struct{ Body ModelRefresh }, error) {
		mp := &platformv1.ModelProvider{}
		if err := s.GetIn(ctx, in.Name, mp); err != nil {
			return nil, err
		}
		discovered, err := s.discoverModels(ctx, mp)
		if err != nil {
			return nil, err
		}
		out, err := s.reconcileModels(ctx, mp, discovered)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return &struct{ Body ModelRefresh }{Body: out}, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "test-model-provider", Method: http.MethodPost, Path: "/api/modelproviders/{name}/test",
		Tags: []string{tagModelProviders}, Summary: "Test the connectivity of a model provider",
		Description: "Asks the provider's endpoint for its model list with the configured credential and changes nothing. " +
			"A failure is a Problem Details that names the HTTP status the endpoint answered (502) or the timeout (504), " +
			"never the credential or the endpoint's answer.",
		Errors: []int{http.StatusNotFound, http.StatusBadGateway, http.StatusGatewayTimeout},
	}, httpapi.PolicyResourcesWrite), func(ctx context.Context, in *httpapi.NameInput) (*struct{ Body ModelProviderTest }, error) {
		mp := &platformv1.ModelProvider{}
		if err := s.GetIn(ctx, in.Name, mp); err != nil {
			return nil, err
		}
		start := time.Now()
		discovered, err := s.discoverModels(ctx, mp)
		if err != nil {
			return nil, err
		}
		return &struct{ Body ModelProviderTest }{Body: ModelProviderTest{Reachable: true, Models: len(discovered),
			LatencyMilliseconds: time.Since(start).Milliseconds()}}, nil
	})
}

// credentials opens model providers' credential Secrets; nil without a Secrets service.
func (s *routes) credentials() provider.Credentials {
	if svc := s.Secrets(); svc != nil {
		return svc
	}
	return nil
}

// discoverModels lists the models at mp's endpoint; its errors are Problem Details.
func (s *routes) discoverModels(ctx context.Context, mp *platformv1.ModelProvider) ([]provider.DiscoveredModel, error) {
	endpoint, err := provider.EndpointOf(ctx, mp, s.Config(), s.credentials())
	if err != nil {
		return nil, huma.Error422UnprocessableEntity(err.Error())
	}
	if endpoint.Type == platformv1.DeterministicProvider {
		// The offline provider serves one in-process model and has nothing to contact.
		return []provider.DiscoveredModel{{ID: "deterministic"}}, nil
	}
	models, err := provider.NewOpenAIClient(endpoint).Models(ctx)
	var endpointErr *provider.EndpointError
	switch {
	case err == nil:
		return models, nil
	case errors.As(err, &endpointErr) && endpointErr.Timeout:
		return nil, huma.Error504GatewayTimeout(endpointErr.Error())
	case errors.As(err, &endpointErr):
		return nil, huma.Error502BadGateway(endpointErr.Error())
	}
	return nil, httpapi.Problem(err)
}

// reconcileModels makes mp's Models match discovered. Status is written with merge patches so a
// concurrent write of the Model controller (conditions) is neither lost nor a conflict.
func (s *routes) reconcileModels(ctx context.Context, mp *platformv1.ModelProvider, discovered []provider.DiscoveredModel) (ModelRefresh, error) {
	var out ModelRefresh
	models := &platformv1.ModelList{}
	if err := s.Kube().List(ctx, models, client.InNamespace(mp.Namespace)); err != nil {
		return out, err
	}
	byID := map[string]*platformv1.Model{}
	for i := range models.Items {
		if string(models.Items[i].Definition.Provider.Name) == mp.Name {
			byID[models.Items[i].Definition.ModelID] = &models.Items[i]
		}
	}
	now := metav1.Now()
	seen := map[string]bool{}
	for _, d := range discovered {
		if seen[d.ID] || len(d.ID) > 256 {
			continue
		}
		seen[d.ID] = true
		observed := observedSpecification(d)
		effective := effectiveSpecification(observed, overrideOf(mp, d.ID))
		m, exists := byID[d.ID]
		if !exists {
			m = &platformv1.Model{
				ObjectMeta: metav1.ObjectMeta{Namespace: mp.Namespace, Name: modelObjectName(mp.Name, d.ID),
					OwnerReferences: []metav1.OwnerReference{{APIVersion: platformv1.GroupVersion.String(), Kind: "ModelProvider",
						Name: mp.Name, UID: mp.UID}}},
				Definition: platformv1.ModelDefinition{Provider: platformv1.LocalObjectReference{Name: platformv1.ResourceName(mp.Name)}, ModelID: d.ID},
			}
			if err := s.Kube().Create(ctx, m); err != nil {
				return out, err
			}
			out.Created++
		} else {
			switch {
			case m.Status.Availability == platformv1.ModelMissing:
				out.Reappeared++
			case !equality.Semantic.DeepEqual(m.Status.ObservedSpecification, observed) ||
				!equality.Semantic.DeepEqual(m.Status.EffectiveSpecification, effective):
				out.Updated++
			default:
				out.Unchanged++
			}
		}
		before := m.DeepCopy()
		m.Status.Availability, m.Status.LastSeenTime = platformv1.ModelAvailable, &now
		m.Status.ObservedSpecification, m.Status.EffectiveSpecification = observed, effective
		if err := s.Kube().Status().Patch(ctx, m, client.MergeFrom(before)); err != nil {
			return out, err
		}
	}
	for id, m := range byID {
		if seen[id] {
			continue
		}
		out.Missing++
		if m.Status.Availability != platformv1.ModelMissing {
			before := m.DeepCopy()
			m.Status.Availability = platformv1.ModelMissing
			if err := s.Kube().Status().Patch(ctx, m, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
				return out, err
			}
		}
	}
	out.Total = out.Created + out.Updated + out.Unchanged + out.Reappeared + out.Missing
	before := mp.DeepCopy()
	mp.Status.LastDiscoveryTime, mp.Status.Models = &now, int32(len(seen))
	return out, s.Kube().Status().Patch(ctx, mp, client.MergeFrom(before))
}

// observedSpecification is what the endpoint's model list says of a model; nil when nothing.
func observedSpecification(d provider.DiscoveredModel) *platformv1.ModelSpecification {
	if d.ContextWindowTokens <= 0 {
		return nil
	}
	return &platformv1.ModelSpecification{ContextWindowTokens: ptr.To(d.ContextWindowTokens)}
}

func overrideOf(mp *platformv1.ModelProvider, modelID string) *platformv1.ModelSpecification {
	for i := range mp.Definition.SpecificationOverrides {
		if mp.Definition.SpecificationOverrides[i].ModelID == modelID {
			return &mp.Definition.SpecificationOverrides[i].Specification
		}
	}
	return nil
}

// effectiveSpecification is observed with every field the override sets replaced, and output
// formats narrowed to what the chat adapter produces (it has no JSON Schema mode yet).
func effectiveSpecification(observed, override *platformv1.ModelSpecification) *platformv1.ModelSpecification {
	if observed == nil && override == nil {
		return nil
	}
	out := &platformv1.ModelSpecification{}
	if observed != nil {
		out = observed.DeepCopy()
	}
	if o := override; o != nil {
		if o.ContextWindowTokens != nil {
			out.ContextWindowTokens = o.ContextWindowTokens
		}
		if o.MaxOutputTokens != nil {
			out.MaxOutputTokens = o.MaxOutputTokens
		}
		if o.InputModalities != nil {
			out.InputModalities = o.InputModalities
		}
		if o.OutputFormats != nil {
			out.OutputFormats = o.OutputFormats
		}
		if o.ToolCalling != nil {
			out.ToolCalling = o.ToolCalling
		}
		if o.Streaming != nil {
			out.Streaming = o.Streaming
		}
		if o.Reasoning != nil {
			out.Reasoning = o.Reasoning
		}
		if o.Temperature != nil {
			out.Temperature = o.Temperature
		}
	}
	var formats []platformv1.OutputFormat
	for _, f := range out.OutputFormats {
		if f != platformv1.JSONSchemaOutput {
			formats = append(formats, f)
		}
	}
	out.OutputFormats = formats
	return out
}

var notInName = regexp.MustCompile(`[^a-z0-9.-]+`)

// modelObjectName is <provider>-<model id> folded to a DNS subdomain; when folding loses
// information (case, '/', ':') or the name is too long, a digest of the id keeps names of
// different ids apart.
func modelObjectName(providerName, modelID string) string {
	folded := strings.Trim(notInName.ReplaceAllString(strings.ToLower(modelID), "-"), "-.")
	name := providerName + "-" + folded
	if folded != modelID || len(name) > 200 {
		sum := sha256.Sum256([]byte(modelID))
		name = strings.TrimRight(name[:min(len(name), 200)], "-.") + "-" + hex.EncodeToString(sum[:])[:8]
	}
	return name
}
