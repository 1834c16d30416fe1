package workplace

import (
	"testing"

	. "github.com/onsi/gomega"
)

// Compact progress is what a conversation's Task card shows: "Waiting for your answer" must end
// with the question, however it ended.
func TestCompactProgressShowsAQuestionOnlyWhileItWaits(t *testing.T) {
	q := func(phase string) Activity {
		return Activity{Kind: ActivityQuestion, Phase: phase, Label: "Which level of detail?", RunID: "r1", Step: "out"}
	}
	run := func(phase string) Activity {
		return Activity{Kind: ActivityRun, Phase: phase, Label: phase, RunID: "r1"}
	}
	cases := map[string]struct {
		activities []Activity
		waiting    bool
	}{
		"a question nobody answered yet waits":                 {[]Activity{q(PhaseWaiting)}, true},
		"a paused Task's open question still waits":            {[]Activity{q(PhaseWaiting), run(PhasePaused)}, true},
		"a reminder keeps the question waiting":                {[]Activity{q(PhaseWaiting), q(PhaseReminded)}, true},
		"an escalated question still waits":                    {[]Activity{q(PhaseWaiting), q(PhaseEscalated)}, true},
		"an answered question no longer waits":                 {[]Activity{q(PhaseWaiting), q(PhaseAnswered)}, false},
		"an expired question of a paused Task no longer waits": {[]Activity{q(PhaseWaiting), run(PhasePaused), q(PhaseReminded), q(PhaseExpired)}, false},
		"a cancelled run's question no longer waits":           {[]Activity{q(PhaseWaiting), run(PhasePaused), run(PhaseCancelled)}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			shown := CompactActivities(tc.activities)
			waiting := len(shown) == 1 && shown[0].Phase == PhaseWaiting
			g.Expect(waiting).To(Equal(tc.waiting), "%+v", shown)
		})
	}
}
