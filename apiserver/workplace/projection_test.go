package workplace

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/work"
)

func TestTheTaskOfAnAutonomousWorkItemIsTitledAfterIt(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, places := workAndPlaces(s)
		item, run, _, err := w.Submit(ctx, work.Submission{
			Context: work.Context{TenantID: "t1", WorkspaceID: "ws-a", Namespace: "a", PrincipalID: "p1"},
			Type:    "report", Title: "Quarterly numbers", Instruction: "i", FlowName: "f", FlowVersion: "1.0.0",
		})
		g.Expect(err).NotTo(HaveOccurred())
		task, err := places.Task(ctx, "ws-a", run.WorkTaskID)
		g.Expect(err).NotTo(HaveOccurred(), "an autonomous run is a Task at once")
		g.Expect(task.ID).To(Equal(item.ID))
		g.Expect(task.Title).To(Equal("Quarterly numbers"))
	})
}
