package workplace

import (
	"testing"
	"time"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func TestTaskReferenceVisible(t *testing.T) {
	tests := map[string]struct {
		display platformv1.TaskDisplay
		facts   TaskFacts
		want    bool
	}{
		"explicitly visible is shown at once":                          {display: platformv1.TaskVisible, want: true},
		"explicitly hidden is authoritative even for actionable":       {display: platformv1.TaskHidden, facts: TaskFacts{Actionable: true, Created: true}, want: false},
		"automatic: an immediate answer shows no Task":                 {display: platformv1.TaskAuto, want: false},
		"automatic: work that asks for a Task shows it":                {display: platformv1.TaskAuto, facts: TaskFacts{Created: true}, want: true},
		"automatic: actionable work shows it":                          {display: platformv1.TaskAuto, facts: TaskFacts{Actionable: true}, want: true},
		"automatic: interrupted work shows it":                         {display: platformv1.TaskAuto, facts: TaskFacts{Interrupted: true}, want: true},
		"automatic: one minute of history is durable":                  {display: platformv1.TaskAuto, facts: TaskFacts{Observed: time.Minute}, want: true},
		"automatic: 59 seconds is not durable":                         {display: platformv1.TaskAuto, facts: TaskFacts{Observed: 59 * time.Second}, want: false},
		"automatic: two completed milestones are substantial":          {display: platformv1.TaskAuto, facts: TaskFacts{Milestones: 2}, want: true},
		"automatic: one milestone is not substantial":                  {display: platformv1.TaskAuto, facts: TaskFacts{Milestones: 1}, want: false},
		"automatic: two deliverables are substantial":                  {display: platformv1.TaskAuto, facts: TaskFacts{Deliverables: 2}, want: true},
		"an Entry without a display setting presents it automatically": {display: "", facts: TaskFacts{Actionable: true}, want: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := TaskReferenceVisible(tt.display, tt.facts); got != tt.want {
				t.Errorf("TaskReferenceVisible(%q, %+v) = %v, want %v", tt.display, tt.facts, got, tt.want)
			}
		})
	}
}
