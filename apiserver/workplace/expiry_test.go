package workplace

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/apiserver/work"
)

// member adds an active Principal with a role in workspace ws-a.
func member(g *WithT, s *store.Store, id, role string) {
	now := time.Now().UTC()
	_, err := s.DB().Exec(s.Rebind(`INSERT INTO principals (id, kind, display_name, status, created_at) VALUES (?, 'Human', ?, 'Active', ?)`), id, id, now)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = s.DB().Exec(s.Rebind(`INSERT INTO memberships (principal_id, scope_kind, scope_id, role, created_at) VALUES (?, 'workspace', 'ws-a', ?, ?)`),
		id, role, now)
	g.Expect(err).NotTo(HaveOccurred())
}

// Every outcome of a question's expiry is an activity of its Task; the reminder notifies the
// person who started the work, an escalation each Owner and Admin of the workspace.
func TestEachOutcomeOfAQuestionsExpiryIsAnActivityOfItsTaskAndTheRightPeopleAreNotified(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, places := workAndPlaces(s)
		clock := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		now := func() time.Time { return clock }
		w.Clock, places.Clock = now, now
		member(g, s, "owner-1", "Owner")
		member(g, s, "admin-1", "Admin")
		member(g, s, "member-1", "Member")
		activities := func(runID string) []string {
			run, err := w.Run(ctx, "ws-a", runID)
			g.Expect(err).NotTo(HaveOccurred())
			list, err := places.Activities(ctx, run.WorkTaskID)
			g.Expect(err).NotTo(HaveOccurred())
			var out []string
			for _, a := range list {
				out = append(out, a.Phase+": "+a.Label)
			}
			return out
		}
		titles := func(principal string) []string {
			list, _, err := places.Notifications(ctx, "ws-a", principal, 50)
			g.Expect(err).NotTo(HaveOccurred())
			var out []string
			for _, n := range list {
				out = append(out, n.Title)
			}
			return out
		}
		ask := func(sus work.Suspension) work.FlowRun {
			_, run := submitAutonomous(g, w)
			claimed, err := w.Claim(ctx, "worker-1", time.Minute)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(claimed.ID).To(Equal(run.ID))
			_, err = w.Apply(ctx, run.ID, "worker-1", work.Transition{State: work.StateRunning, Suspend: &sus})
			g.Expect(err).NotTo(HaveOccurred())
			return run
		}

		proceeding := ask(work.Suspension{Step: "choose", Kind: work.KindChoice, Prompt: "Which level?", Continuation: "choose",
			Options: []work.Option{{Value: "brief", Label: "Brief"}}, TTL: time.Minute, RemindBefore: 20 * time.Second,
			OnExpiry: work.FallbackProceed, Default: json.RawMessage(`"brief"`)})
		clock = clock.Add(40 * time.Second)
		n, err := w.RemindPendingActions(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(Equal(1))
		g.Expect(titles("p1")).To(ContainElement("Reminder: A question is waiting: Quarterly numbers"))
		g.Expect(activities(proceeding.ID)).To(ContainElement(HavePrefix("reminded: Reminder: nobody answered yet")))
		clock = clock.Add(20 * time.Second)
		_, err = w.ExpirePendingActions(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(activities(proceeding.ID)).To(ContainElement("expired: Nobody answered in time: went on with the default answer (Brief)"))
		// It goes on, so it is runnable: out of the way of the next claim.
		_, err = w.Cancel(ctx, "ws-a", proceeding.ID, "done here")
		g.Expect(err).NotTo(HaveOccurred())

		escalating := ask(work.Suspension{Step: "why", Kind: work.KindText, Prompt: "Why?", Continuation: "why", TTL: time.Minute,
			OnExpiry: work.FallbackEscalate})
		clock = clock.Add(time.Minute)
		_, err = w.ExpirePendingActions(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(activities(escalating.ID)).To(ContainElement(HavePrefix("escalated: Nobody answered in time: the question now waits for the workspace's Owners and Admins")))
		for _, p := range []string{"owner-1", "admin-1"} {
			g.Expect(titles(p)).To(ContainElement("Escalated: A question is waiting: Quarterly numbers"), p)
		}
		g.Expect(titles("member-1")).To(BeEmpty(), "a Member is not re-addressed")
		clock = clock.Add(time.Minute)
		_, err = w.ExpirePendingActions(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(activities(escalating.ID)).To(ContainElement("expired: Nobody answered in time: the question expired"))
		list, _, err := places.Notifications(ctx, "ws-a", "owner-1", 50)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(list[0].Resolution).To(Equal(ResolutionExpired), "the escalation stops asking once the question expired")
	})
}

// An escalation reaches every open page live: the workspace's pages are told the question anew
// (PendingActionCreated, marked escalated, so that a Member's "Needs you" and answer forms read it
// again), the person who started the work is told that the question's notification and its
// reminder changed, and each Owner and Admin gets a notification of their own and its unread
// count, and a reminder before the second expiry.
func TestAnEscalationTellsEveryPageOfTheWorkspaceAndEveryNotificationAboutTheQuestion(t *testing.T) {
	storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
		g := NewWithT(t)
		ctx := context.Background()
		w, places := workAndPlaces(s)
		clock := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		now := func() time.Time { return clock }
		w.Clock, places.Clock = now, now
		member(g, s, "admin-1", "Admin")
		_, run := submitAutonomous(g, w)
		_, err := w.Claim(ctx, "worker-1", time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = w.Apply(ctx, run.ID, "worker-1", work.Transition{State: work.StateRunning, Suspend: &work.Suspension{Step: "why", Kind: work.KindText,
			Prompt: "Why?", Continuation: "why", TTL: time.Minute, RemindBefore: 20 * time.Second, OnExpiry: work.FallbackEscalate}})
		g.Expect(err).NotTo(HaveOccurred())
		clock = clock.Add(45 * time.Second)
		_, err = w.RemindPendingActions(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		asked, _, err := places.Notifications(ctx, "ws-a", "p1", 50)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(asked).To(HaveLen(2), "the question and its reminder")
		g.Expect(places.NumberEvents(ctx)).To(Succeed())
		before, err := places.Events(ctx, "ws-a", 0, 500)
		g.Expect(err).NotTo(HaveOccurred())

		clock = clock.Add(20 * time.Second)
		_, err = w.ExpirePendingActions(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(places.NumberEvents(ctx)).To(Succeed())
		events, err := places.Events(ctx, "ws-a", before[len(before)-1].Seq, 500)
		g.Expect(err).NotTo(HaveOccurred())
		type told struct{ Name, PrincipalID, Notification string }
		var got []told
		var anew map[string]any
		for _, e := range events {
			var p map[string]any
			g.Expect(json.Unmarshal(e.Payload, &p)).To(Succeed())
			id, _ := p["notificationId"].(string)
			got = append(got, told{e.Name, e.PrincipalID, id})
			if e.Name == EventPendingActionCreated {
				anew = p
			}
		}
		g.Expect(got).To(ContainElement(told{Name: EventPendingActionCreated}), "every page of the workspace")
		g.Expect(anew).To(HaveKeyWithValue("escalated", true))
		g.Expect(anew).To(HaveKeyWithValue("taskId", run.WorkTaskID))
		for _, n := range asked {
			g.Expect(got).To(ContainElement(told{EventNotificationUpdated, "p1", n.ID}), "the asker's %q", n.Title)
		}
		g.Expect(got).To(ContainElements(HaveField("Name", EventNotificationCreated), HaveField("Name", EventUnreadNotificationCountChanged)))
		g.Expect(got).To(ContainElement(And(HaveField("Name", EventNotificationCreated), HaveField("PrincipalID", "admin-1"))), "the Admin's own")
		g.Expect(got).To(ContainElement(And(HaveField("Name", EventUnreadNotificationCountChanged), HaveField("PrincipalID", "admin-1"))))

		// Before the second expiry, those it now waits for are reminded, and no one else.
		clock = clock.Add(50 * time.Second)
		n, err := w.RemindPendingActions(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(Equal(1))
		reminded, _, err := places.Notifications(ctx, "ws-a", "admin-1", 50)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(reminded).To(ContainElement(HaveField("Title", "Reminder: Escalated: A question is waiting: Quarterly numbers")))
		after, _, err := places.Notifications(ctx, "ws-a", "p1", 50)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(after).To(HaveLen(len(asked)), "the Member who asked is not reminded of a question that is no longer theirs")
	})
}
