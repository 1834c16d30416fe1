package workplace

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/work"
)

// submitAutonomous submits the WorkItem "Quarterly numbers" in ws-a through the Work store, as
// the Work API does: its run is an autonomous Task's.
func submitAutonomous(g *WithT, w *work.Store) (work.WorkItem, work.FlowRun) {
	item, run, _, err := w.Submit(context.Background(), work.Submission{
		Context: work.Context{TenantID: "t1", WorkspaceID: "ws-a", Namespace: "a", PrincipalID: "p1"},
		Type:    "report", Title: "Quarterly numbers", Instruction: "i", FlowName: "f", FlowVersion: "1.0.0",
	})
	g.Expect(err).NotTo(HaveOccurred())
	return item, run
}

func TestTheTaskOfAnAutonomousWorkItemIsTitledAfterIt(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, places := workAndPlaces(s)
		item, run := submitAutonomous(g, w)
		task, err := places.Task(ctx, "ws-a", run.WorkTaskID)
		g.Expect(err).NotTo(HaveOccurred(), "an autonomous run is a Task at once")
		g.Expect(task.ID).To(Equal(item.ID))
		g.Expect(task.Title).To(Equal("Quarterly numbers"))
	})
}

// Each finished turn of an agent is a milestone of the Task, counted whether the transition that
// tells it also changes the Task's state or not.
func TestEachFinishedAgentTurnIsAMilestoneOfTheTask(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, places := workAndPlaces(s)
		_, run := submitAutonomous(g, w)
		claimed, err := w.Claim(ctx, "worker-1", time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(claimed.ID).To(Equal(run.ID))
		agent := func(name string) platformv1.FlowStep {
			return platformv1.FlowStep{Name: name, Type: platformv1.AgentStep, Agent: &platformv1.LocalObjectReference{Name: "writer"}}
		}
		snapshot, err := json.Marshal(platformv1.FlowDefinition{FlowKind: platformv1.OrchestrationFlow,
			Steps: []platformv1.FlowStep{{Name: "in", Type: platformv1.InputStep}, agent("draft"), agent("review"), {Name: "out", Type: platformv1.OutputStep}},
			Edges: []platformv1.FlowEdge{{From: "in", To: "draft"}, {From: "draft", To: "review"}, {From: "review", To: "out"}}})
		g.Expect(err).NotTo(HaveOccurred())
		milestones := func() int {
			task, err := places.Task(ctx, "ws-a", run.WorkTaskID)
			g.Expect(err).NotTo(HaveOccurred())
			return task.Milestones
		}

		// Pending -> Running: the Task's state changes in the transition that finishes the first turn.
		_, err = w.Apply(ctx, run.ID, "worker-1", work.Transition{Pin: &work.Pin{Digest: "sha256:f", Snapshot: snapshot}, State: work.StateRunning,
			Events: []work.Event{{Type: work.EventStepStarted, Step: "draft"}, {Type: work.EventStepCompleted, Step: "draft"}}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(milestones()).To(Equal(1))
		// Still Running: only the count changes.
		_, err = w.Apply(ctx, run.ID, "worker-1", work.Transition{
			Events: []work.Event{{Type: work.EventStepStarted, Step: "review"}, {Type: work.EventStepCompleted, Step: "review"}}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(milestones()).To(Equal(2))

		// Submitted and run to its end in one transition (the Task created in it): each turn counts.
		p, err := w.Prepare(work.Submission{Context: work.Context{TenantID: "t1", WorkspaceID: "ws-a", Namespace: "a", PrincipalID: "p1"},
			Type: "report", Title: "At once", Instruction: "i", FlowName: "f", FlowVersion: "1.0.0",
			Lease: &work.Lease{Owner: "worker-1", Until: time.Now().Add(time.Minute)}})
		g.Expect(err).NotTo(HaveOccurred())
		_, ran, err := w.SubmitApplied(ctx, p, "worker-1", work.Transition{Pin: &work.Pin{Digest: "sha256:f", Snapshot: snapshot},
			State: work.StateCompleted, Result: json.RawMessage(`{"output":"done"}`), Events: []work.Event{
				{Type: work.EventStepStarted, Step: "in"}, {Type: work.EventStepCompleted, Step: "in"},
				{Type: work.EventStepStarted, Step: "draft"}, {Type: work.EventStepCompleted, Step: "draft"},
				{Type: work.EventStepStarted, Step: "review"}, {Type: work.EventStepCompleted, Step: "review"},
				{Type: work.EventRunCompleted, State: work.StateCompleted}}})
		g.Expect(err).NotTo(HaveOccurred())
		task, err := places.Task(ctx, "ws-a", ran.WorkTaskID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(task.Milestones).To(Equal(2), "the Input step is no turn")
		g.Expect(task.State).To(Equal(TaskCompleted))
	})
}

// TestEveryChangeOfARunIsInTheOutboxForTheKubeWatches: a run's creation, each transition and its
// deletion write FlowRunChanged (which the hub does not send), so that kube watches of FlowRuns
// and WorkItems see them; deleting a Task tells each of its runs gone.
func TestEveryChangeOfARunIsInTheOutboxForTheKubeWatches(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, places := workAndPlaces(s)
		runChanges := func() []string {
			g.Expect(places.NumberEvents(ctx)).To(Succeed())
			events, err := places.Events(ctx, "ws-a", 0, 500)
			g.Expect(err).NotTo(HaveOccurred())
			var out []string
			for _, e := range events {
				if e.Name == EventFlowRunChanged {
					var p struct {
						FlowRunID, WorkItemID, State string
						Created, Deleted             bool
					}
					g.Expect(json.Unmarshal(e.Payload, &p)).To(Succeed())
					out = append(out, fmt.Sprintf("%s %s %s created=%v deleted=%v", p.FlowRunID, p.WorkItemID, p.State, p.Created, p.Deleted))
				}
			}
			return out
		}
		item, run := submitAutonomous(g, w)
		_, err := w.Cancel(ctx, "ws-a", run.ID, "no longer needed")
		g.Expect(err).NotTo(HaveOccurred())
		cancelled, err := w.Run(ctx, "ws-a", run.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(w.Delete(ctx, "ws-a", run.ID, cancelled.Version)).To(Succeed())
		g.Expect(runChanges()).To(Equal([]string{
			run.ID + " " + item.ID + " Pending created=true deleted=false",
			run.ID + " " + item.ID + " Cancelled created=false deleted=false",
			run.ID + " " + item.ID + " Cancelled created=false deleted=true",
		}))

		other, otherRun := submitAutonomous(g, w)
		_, err = w.Cancel(ctx, "ws-a", otherRun.ID, "no longer needed")
		g.Expect(err).NotTo(HaveOccurred())
		task, err := places.Task(ctx, "ws-a", other.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(places.DeleteTask(ctx, "ws-a", task.ID, task.Version)).To(Succeed())
		g.Expect(runChanges()).To(HaveLen(6))
		g.Expect(runChanges()[5]).To(HavePrefix(otherRun.ID+" "+other.ID), "the Task's run is told gone")
		g.Expect(runChanges()[5]).To(HaveSuffix("deleted=true"))
	})
}

// An answered question's notification is resolved and read, and leaves the unread count once:
// one its Principal had read already is not taken out of the count a second time.
func TestAnAnsweredQuestionsNotificationLeavesTheUnreadCountOnce(t *testing.T) {
	for name, tc := range map[string]struct {
		readBefore bool
	}{
		"unread when answered": {},
		"read before answered": {readBefore: true},
	} {
		t.Run(name, func(t *testing.T) {
			storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
				g := NewWithT(t)
				ctx := context.Background()
				w, places := workAndPlaces(s)
				_, run := submitAutonomous(g, w)
				_, err := w.Claim(ctx, "worker-1", time.Minute)
				g.Expect(err).NotTo(HaveOccurred())
				_, err = w.Apply(ctx, run.ID, "worker-1", work.Transition{State: work.StateRunning,
					Suspend: &work.Suspension{Step: "ask", Kind: work.KindText, Prompt: "Which quarter?", Continuation: "ask"}})
				g.Expect(err).NotTo(HaveOccurred())
				unread := func() int {
					n, err := places.UnreadCount(ctx, "ws-a", "p1")
					g.Expect(err).NotTo(HaveOccurred())
					return n
				}
				notes, _, err := places.Notifications(ctx, "ws-a", "p1", 10)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(notes).To(HaveLen(1))
				g.Expect(unread()).To(Equal(1))
				if tc.readBefore {
					_, err := places.MarkRead(ctx, "ws-a", "p1", notes[0].ID)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(unread()).To(Equal(0))
				}
				action, err := w.OpenPendingAction(ctx, run.ID)
				g.Expect(err).NotTo(HaveOccurred())
				_, _, _, err = w.Respond(ctx, work.Response{WorkspaceID: "ws-a", RunID: run.ID, ActionID: action.ID, SkipToken: true,
					PrincipalID: "p1", Answer: work.Answer{Value: ptrTo("Q3")}})
				g.Expect(err).NotTo(HaveOccurred())

				g.Expect(unread()).To(Equal(0), "the count never goes below the unread notifications")
				notes, _, err = places.Notifications(ctx, "ws-a", "p1", 10)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(notes).To(ConsistOf(And(
					HaveField("Resolution", ResolutionAnswered), HaveField("ReadAt", Not(BeZero())), HaveField("Attention", false))))
			})
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
