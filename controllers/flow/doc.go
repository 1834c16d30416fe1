// Package flow reconciles Flows: it validates each draft definition (a Direct flow's target, an
// Orchestration flow's graph and CEL expressions), checks that the Agents it names exist, and
// reports the result with field paths (Ready) and the digest of the definition.
package flow
