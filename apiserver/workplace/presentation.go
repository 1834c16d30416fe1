package workplace

import (
	"time"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// DurableAfter is how much observed Work history makes a Task durable (spec Limits: at least one
// minute).
const DurableAfter = time.Minute

// TaskFacts is what decides, under automatic presentation, whether a Task reference appears.
type TaskFacts struct {
	// Actionable: the work waits for a person (a pending action is open).
	Actionable bool
	// Interrupted: the work was paused, or failed or was cancelled before it completed.
	Interrupted bool
	// Observed is how long the Work history of the Task spans so far.
	Observed time.Duration
	// Milestones counts completed progress milestones (a participant's finished turns).
	Milestones int
	// Deliverables counts the Task's artifacts.
	Deliverables int
	// Created: the work itself asked for a Task (the createTask action).
	Created bool
}

// TaskReferenceVisible applies rule 11: an explicitly visible Task is shown, an explicitly
// hidden one never (hidden is authoritative, even when the work asks for a Task); under
// automatic presentation a Task is shown when the work created it, is actionable, interrupted,
// durable (at least one minute of observed history) or substantial (several completed
// milestones, or several deliverables).
func TaskReferenceVisible(display platformv1.TaskDisplay, f TaskFacts) bool {
	switch display {
	case platformv1.TaskVisible:
		return true
	case platformv1.TaskHidden:
		return false
	}
	return f.Created || f.Actionable || f.Interrupted || f.Observed >= DurableAfter || f.Milestones > 1 || f.Deliverables > 1
}
