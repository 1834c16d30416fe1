// Package model reconciles Models: a discovered Model is Ready when the ModelProvider that
// serves it exists. Discovery (availability, specifications) is not this reconciler's job.
package model
