package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/usage"
	"platform.dev/platform/internal/config"
)

// ManagedProvider is Managed mode: each call resolves the agent's ModelProfile and that
// profile's ModelProvider in the run's workspace and calls the provider's endpoint with the
// profile's model and generation settings. Resolution happens per call, so an edited profile or
// provider takes effect for the next step without a restart.
//
// Credentials: a ModelProvider names its API key as a Secret (definition.credential), resolved in
// the provider's scope at each call by the one Resolver of Secrets and opened from its Vault for
// that call only. A provider with no credential falls back to the setting
// AI:Providers:<name>:ApiKey (environment variable AI__Providers__<name>__ApiKey), shared by every
// workspace that names a provider alike; without either it sends no key (local servers).
// AI:Providers:<name>:TimeoutSeconds bounds one request (60 by default).
type ManagedProvider struct {
	Config *config.Config
	// Client reads ModelProfiles and ModelProviders; nil until the kube API is up.
	Client client.Reader
	// Credentials opens credential Secrets; nil refuses every provider that names one.
	Credentials Credentials
	// HTTPClient is the transport to model endpoints; http.DefaultClient when nil.
	HTTPClient *http.Client
}

// Credentials opens the value of a credential Secret for one call (*secrets.Service in
// `platform serve`): consumerNamespace is where the provider lives, field the reference's path.
type Credentials interface {
	Value(ctx context.Context, consumerNamespace, field string, ref platformv1.SecretReference) ([]byte, error)
}

// Name is Managed.
func (m *ManagedProvider) Name() string { return Managed }

// Target is where one agent call goes and with which settings.
type Target struct {
	Endpoint   Endpoint
	Generation Generation
	// Pricing is the provider's price table.
	Pricing *platformv1.ModelPricing
}

// Invoke resolves the agent's model and asks it once.
func (m *ManagedProvider) Invoke(ctx context.Context, req Request) (Action, error) {
	target, err := m.Resolve(ctx, req.Namespace, req.Agent)
	if err != nil {
		return Action{}, err
	}
	if target.Endpoint.Type == platformv1.DeterministicProvider {
		act, err := DeterministicProvider{}.Invoke(ctx, req)
		if err == nil {
			act.ModelProvider = target.Endpoint.Provider
			err = priced(&act, target.Pricing, act.Model)
		}
		return act, err
	}
	g := target.Generation
	if o := req.Overrides.Temperature; o != nil {
		g.Temperature = o
	}
	if o := req.Overrides.MaxOutputTokens; o != nil {
		g.MaxOutputTokens = o
	}
	act, err := NewOpenAIClient(target.Endpoint).Converse(ctx, g, Conversation{Instructions: req.Agent.Instructions, Message: req.Message,
		Tools: append(BuiltinTools(), req.Tools...), Transcript: req.Transcript})
	if err == nil {
		err = priced(&act, target.Pricing, act.Model, g.Model)
	}
	return act, err
}

// priced gives the usage of act the price of the first of models that pricing lists (the model
// the endpoint answered with, then the one asked for: endpoints answer with dated variants).
func priced(act *Action, pricing *platformv1.ModelPricing, models ...string) error {
	if act.Usage == nil || pricing == nil {
		return nil
	}
	for _, model := range models {
		p, ok, err := usage.PriceOf(pricing, model)
		if err != nil {
			return fmt.Errorf("model provider %s: %w", act.ModelProvider, err)
		}
		if ok {
			act.Usage.Price = &p
			return nil
		}
	}
	return nil
}

// Resolve follows agent -> ModelProfile -> ModelProvider in namespace (or the profile's own, when the
// agent names it). Its errors are permanent:
// retrying does not fix a missing profile.
func (m *ManagedProvider) Resolve(ctx context.Context, namespace string, agent Agent) (Target, error) {
	if m.Client == nil {
		return Target{}, errors.New("Managed mode is not connected to the Management API yet")
	}
	if agent.ModelProfile == "" {
		return Target{}, fmt.Errorf("agent %q selects no model profile", agent.Name)
	}
	if agent.ModelProfileNamespace != "" {
		namespace = agent.ModelProfileNamespace
	}
	profile, err := m.profile(ctx, namespace, agent.ModelProfile)
	if err != nil {
		return Target{}, fmt.Errorf("agent %q: %w", agent.Name, err)
	}
	mp := &platformv1.ModelProvider{}
	err = m.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: string(profile.Definition.Provider.Name)}, mp)
	if apierrors.IsNotFound(err) {
		return Target{}, fmt.Errorf("model profile %q: model provider %q not found", profile.Name, profile.Definition.Provider.Name)
	}
	if err != nil {
		return Target{}, err
	}
	endpoint, err := EndpointOf(ctx, mp, m.Config, m.Credentials)
	if err != nil {
		return Target{}, err
	}
	endpoint.HTTPClient = m.HTTPClient
	g, err := GenerationOf(profile)
	if err != nil {
		return Target{}, err
	}
	if g.Model == "" {
		g.Model = m.Config.Get(providerSetting(mp.Name, "DefaultModel"))
	}
	return Target{Endpoint: endpoint, Generation: g, Pricing: mp.Definition.Pricing}, nil
}

// profile reads a ModelProfile by name or, failing that, by resource id (metadata.uid).
func (m *ManagedProvider) profile(ctx context.Context, namespace, ref string) (*platformv1.ModelProfile, error) {
	profile := &platformv1.ModelProfile{}
	err := m.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref}, profile)
	if err == nil {
		return profile, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	profiles := &platformv1.ModelProfileList{}
	if err := m.Client.List(ctx, profiles, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	for i := range profiles.Items {
		if string(profiles.Items[i].UID) == ref {
			return &profiles.Items[i], nil
		}
	}
	return nil, fmt.Errorf("model profile %q not found", ref)
}

// EndpointOf is how to reach mp: its type and endpoint, its API key (the value of its credential
// Secret, else the fallback setting; see ManagedProvider) and the configured timeout. Errors name
// the Secret and why it cannot be used, never a value.
func EndpointOf(ctx context.Context, mp *platformv1.ModelProvider, cfg *config.Config, credentials Credentials) (Endpoint, error) {
	e := Endpoint{Provider: mp.Name, Type: mp.Definition.Type, BaseURL: mp.Definition.Endpoint, Timeout: DefaultRequestTimeout}
	if cfg != nil {
		if v := cfg.Get(providerSetting(mp.Name, "TimeoutSeconds")); v != "" {
			seconds, err := strconv.Atoi(v)
			if err != nil || seconds < 1 || seconds > 600 {
				return e, fmt.Errorf("%s=%q: must be a number from 1 to 600", providerSetting(mp.Name, "TimeoutSeconds"), v)
			}
			e.Timeout = time.Duration(seconds) * time.Second
		}
	}
	if e.Type != platformv1.DeterministicProvider && e.BaseURL == "" {
		return e, fmt.Errorf("model provider %q has no endpoint", mp.Name)
	}
	switch ref := mp.Definition.Credential; {
	case ref != nil && e.Type != platformv1.DeterministicProvider:
		if credentials == nil {
			return e, fmt.Errorf("model provider %q: its credential Secret %q cannot be opened: no Vault is connected", mp.Name, ref.Name)
		}
		key, err := credentials.Value(ctx, mp.Namespace, "definition.credential", *ref)
		if err != nil {
			return e, fmt.Errorf("model provider %q: %w", mp.Name, err)
		}
		e.APIKey, e.KeySource = string(key), fmt.Sprintf("the value of its credential Secret %q", ref.Name)
	case cfg != nil && cfg.Get(providerSetting(mp.Name, "ApiKey")) != "":
		e.APIKey, e.KeySource = cfg.Get(providerSetting(mp.Name, "ApiKey")), "the variable "+APIKeySetting(mp.Name)
	}
	return e, nil
}

// GenerationOf is the generation intent of profile, parsed.
func GenerationOf(profile *platformv1.ModelProfile) (Generation, error) {
	def := profile.Definition
	g := Generation{Model: def.ModelID}
	if gen := def.Generation; gen != nil {
		var err error
		if g.Temperature, err = decimal(gen.Temperature); err != nil {
			return g, fmt.Errorf("model profile %q: definition.generation.temperature: %w", profile.Name, err)
		}
		if g.TopP, err = decimal(gen.TopP); err != nil {
			return g, fmt.Errorf("model profile %q: definition.generation.topP: %w", profile.Name, err)
		}
		if gen.MaxOutputTokens != nil {
			n := int64(*gen.MaxOutputTokens)
			g.MaxOutputTokens = &n
		}
		g.StopSequences = gen.StopSequences
	}
	if def.Reasoning != nil {
		g.ReasoningEffort = def.Reasoning.Effort
	}
	if def.Output != nil {
		g.OutputFormat = def.Output.Format
	}
	return g, nil
}

func decimal(s string) (*float64, error) {
	if s == "" {
		return nil, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, errors.New("not a decimal number")
	}
	return &f, nil
}

func providerSetting(provider, key string) string { return "AI:Providers:" + provider + ":" + key }

// APIKeySetting names the environment variable that holds a provider's API key, for messages.
func APIKeySetting(provider string) string { return "AI__Providers__" + provider + "__ApiKey" }
