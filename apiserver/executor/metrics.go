package executor

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Run and step metrics, in the registry the controllers use, so that one /metrics shows both.
// Labels are step types, outcomes and states only: never workspaces, flows or run ids, which
// would grow without bound.
var (
	runsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "platform_flow_runs_finished_total",
		Help: "FlowRuns a worker brought to an end, by final state (Completed or Failed).",
	}, []string{"state"})
	runsClaimed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "platform_flow_runs_claimed_total",
		Help: "Times a worker claimed a runnable FlowRun.",
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
)

func init() {
	ctrlmetrics.Registry.MustRegister(runsFinished, runsClaimed, stepsExecuted, stepsRestarted, stepDuration)
}
