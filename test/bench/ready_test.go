package bench

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformscheme "platform.dev/platform/apis/platform/scheme"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers"
)

// BenchmarkAgentCreateToReady measures, with the platform's controller manager running, the time
// from an Agent's create to its Ready=True condition (a resolvable ModelProfile and ModelProvider
// exist), one Agent at a time; p50/p99 over all ops.
func BenchmarkAgentCreateToReady(b *testing.B) {
	env := startEnv(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The controllers run as the platform, as in `platform serve`.
	mgr, err := controllers.NewManager(env.Platform, controllers.Options{})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	kube, err := client.NewWithWatch(env.Config, client.Options{Scheme: platformscheme.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	namespace := createNamespace(b, env)
	for _, obj := range []client.Object{
		&platformv1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "key"},
			Definition: platformv1.SecretDefinition{Vault: platformv1.VaultReference{Name: "local"}}},
		&platformv1.ModelProvider{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "provider"},
			Definition: platformv1.ModelProviderDefinition{Type: platformv1.OpenAICompatibleProvider,
				Endpoint: "https://models.example/v1", Credential: &platformv1.SecretReference{Name: "key"}}},
		&platformv1.ModelProfile{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "profile"},
			Definition: platformv1.ModelProfileDefinition{Provider: platformv1.LocalObjectReference{Name: "provider"}, ModelID: "m"}},
	} {
		if err := kube.Create(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
	// The first agent waits for the chain itself to become Ready; it is not timed.
	if _, err := createAndAwaitReady(ctx, kube, namespace, uniqueName("warmup")); err != nil {
		b.Fatal(err)
	}

	// A sub-benchmark, so that the manager above is built once whatever b.N go chooses.
	b.Run("agent", func(b *testing.B) {
		var latencies []time.Duration
		for range b.N {
			elapsed, err := createAndAwaitReady(ctx, kube, namespace, uniqueName("ready"))
			if err != nil {
				b.Fatal(err)
			}
			latencies = append(latencies, elapsed)
		}
		reportLatencies(b, latencies)
	})
}

func createAndAwaitReady(ctx context.Context, kube client.WithWatch, namespace, name string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	w, err := kube.Watch(ctx, &platformv1.AgentList{}, client.InNamespace(namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	agent := &platformv1.Agent{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Definition: platformv1.AgentDefinition{ModelProfile: &platformv1.ModelProfileReference{Name: "profile"}},
	}
	start := time.Now()
	if err := kube.Create(ctx, agent); err != nil {
		return 0, err
	}
	for event := range w.ResultChan() {
		if event.Type != watch.Modified && event.Type != watch.Added {
			continue
		}
		if got, ok := event.Object.(*platformv1.Agent); ok && meta.IsStatusConditionTrue(got.Status.Conditions, platformv1.ReadyCondition) {
			return time.Since(start), nil
		}
	}
	return 0, ctx.Err()
}
