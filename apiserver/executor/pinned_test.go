package executor_test

import (
	"encoding/json"
	"slices"
	"testing"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/executor"
)

// The steps of a run's pinned snapshot name what its events are about: a Direct flow's three, a
// graph's own, and those of a graph that cannot run too; an unreadable snapshot has none. Asked
// again for the same snapshot, the answer is the same.
func TestPinnedStepsAreTheStepsTheSnapshotRuns(t *testing.T) {
	g := NewWithT(t)
	snapshot := func(def platformv1.FlowDefinition) json.RawMessage {
		b, err := json.Marshal(def)
		g.Expect(err).NotTo(HaveOccurred())
		return b
	}
	names := func(steps map[string]platformv1.FlowStep) []string {
		var out []string
		for name, s := range steps {
			g.Expect(s.Name).To(Equal(name))
			out = append(out, name)
		}
		slices.Sort(out)
		return out
	}
	direct := snapshot(platformv1.FlowDefinition{FlowKind: platformv1.DirectFlow,
		Target: &platformv1.FlowTarget{Kind: platformv1.AgentFlowTarget, ID: "writer"}})
	steps := executor.PinnedSteps(direct)
	g.Expect(steps).To(HaveLen(3))
	var agents []string
	for _, s := range steps {
		if s.Type == platformv1.AgentStep && s.Agent != nil {
			agents = append(agents, string(s.Agent.Name))
		}
	}
	g.Expect(agents).To(Equal([]string{"writer"}), "the Direct flow's agent step invokes its target")

	graph := snapshot(platformv1.FlowDefinition{Steps: []platformv1.FlowStep{
		{Name: "in", Type: platformv1.InputStep}, {Name: "draft", Type: platformv1.AgentStep}, {Name: "out", Type: platformv1.OutputStep}}})
	for range 2 {
		g.Expect(names(executor.PinnedSteps(graph))).To(Equal([]string{"draft", "in", "out"}))
	}

	noInput := snapshot(platformv1.FlowDefinition{Steps: []platformv1.FlowStep{{Name: "draft", Type: platformv1.AgentStep}}})
	g.Expect(names(executor.PinnedSteps(noInput))).To(Equal([]string{"draft"}))

	g.Expect(executor.PinnedSteps(json.RawMessage(`{not json`))).To(BeEmpty())
	g.Expect(executor.PinnedSteps(nil)).To(BeEmpty())
}
