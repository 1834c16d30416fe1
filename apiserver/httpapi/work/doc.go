// Package work is the work area of the service API: WorkItems, FlowRuns with their events,
// streams and pending actions, Runtime Runs and routing. It calls the Work store
// (apiserver/work) and the flow executor.
package work
