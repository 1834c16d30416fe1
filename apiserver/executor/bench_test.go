package executor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/executor"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/work"
)

// BenchmarkExecutorSteps measures steps executed per second by one worker: runs of Input, eight
// Transform steps and Output: pure steps, persisted together with the outcome of the run.
func BenchmarkExecutorSteps(b *testing.B) {
	const transforms = 8
	steps := []platformv1.FlowStep{input}
	edges := []platformv1.FlowEdge{}
	prev := "in"
	for i := range transforms {
		name := fmt.Sprintf("t%d", i)
		steps = append(steps, platformv1.FlowStep{Name: name, Type: platformv1.TransformStep, Expression: `input.title + "!"`})
		edges = append(edges, edge(prev, name))
		prev = name
	}
	steps = append(steps, output)
	edges = append(edges, edge(prev, "out"))
	def := orchestration(steps, edges...)

	storetest.ForEachDialectBench(b, func(b *testing.B, s *store.Store) {
		ctx := context.Background()
		w := work.New(s)
		exec, err := executor.New(executor.Options{Work: w, Provider: provider.DeterministicProvider{}, Lease: time.Minute,
			Resolver:  &resolver{flows: map[string]platformv1.FlowDefinition{"bench@1.0.0": def}, agents: map[string]provider.Agent{}},
			Authorize: func(context.Context, work.Context) error { return nil }})
		if err != nil {
			b.Fatal(err)
		}
		for range b.N {
			if _, _, _, err := w.Submit(ctx, work.Submission{Context: ctxA, Type: "t", Title: "t", Instruction: "i",
				FlowName: "bench", FlowVersion: "1.0.0", Input: map[string]any{"title": "t"}}); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		for {
			worked, err := exec.RunOnce(ctx, "bench")
			if err != nil {
				b.Fatal(err)
			}
			if !worked {
				break
			}
		}
		b.ReportMetric(float64(b.N*(transforms+2))/b.Elapsed().Seconds(), "steps/s")
	})
}
