package executor

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"platform.dev/platform/apiserver/work"
)

// Run and step metrics, in the registry the controllers use, so that one /metrics shows both.
// Labels of the run and step metrics are step types, outcomes and states only: never flows or run
// ids, which would grow without bound.
var (
	runsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "platform_flow_runs_finished_total",
		Help: "FlowRuns a worker brought to an end, by final state (Completed or Failed).",
	}, []string{"state"})
	runsClaimed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "platform_flow_runs_claimed_total",
		Help: "Times a worker claimed a runnable FlowRun.",
	})
	runsHandedOver = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "platform_flow_run_workers_handed_over_total",
		Help: "Times a worker with no queued run to claim went to a submission or answer waiting for one.",
	})
	stepsExecuted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "platform_flow_run_steps_total",
		Help: "Executed steps, by step type and outcome (completed, suspended, failed, retried, ended).",
	}, []string{"type", "outcome"})
	stepsRestarted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "platform_flow_run_steps_restarted_total",
		Help: "Started steps that a worker took over after the worker executing them stopped.",
	})
	stepDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "platform_flow_run_step_duration_seconds",
		Help:    "Time to execute a step (an Agent step's model call included), by step type.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
	}, []string{"type"})
	// The usage metrics are by workspace and agent, as people ask what a workspace's agents
	// spend: both are names people create, bounded by what a workspace holds.
	modelTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "platform_model_tokens_total",
		Help: "Tokens of the model calls of runs, recorded with their outcome, by workspace (id), agent and direction (input or output).",
	}, []string{"workspace", "agent", "direction"})
	modelCost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "platform_model_cost_micros_total",
		Help: "Cost of the model calls of runs in millionths of the currency, by workspace (id), agent and currency (priced calls only).",
	}, []string{"workspace", "agent", "currency"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(runsFinished, runsClaimed, runsHandedOver, stepsExecuted, stepsRestarted, stepDuration, modelTokens, modelCost)
}

// observeUsage counts model calls whose usage was committed.
func observeUsage(workspaceID string, calls ...work.ModelCall) {
	for _, c := range calls {
		modelTokens.WithLabelValues(workspaceID, c.Agent, "input").Add(float64(c.InputTokens))
		modelTokens.WithLabelValues(workspaceID, c.Agent, "output").Add(float64(c.OutputTokens))
		if c.Currency != "" {
			modelCost.WithLabelValues(workspaceID, c.Agent, c.Currency).Add(float64(c.CostMicros))
		}
	}
}
