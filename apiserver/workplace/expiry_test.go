package workplace

import (
	"context"
	"encoding/json"
	"strings"
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

// Once a question escalated, the notifications of it held by someone it no longer waits for (the
// Member who asked) stop asking for an answer: they read as news that it went to the workspace's
// administrators, no longer need attention, and the unread count stays exact (the news is counted
// once, and leaves the count once when the question ends). An Admin's keep asking.
func TestAnEscalatedQuestionsNotificationIsNewsForWhomItNoLongerWaitsFor(t *testing.T) {
	news := "Nobody answered in time, so the question went to the workspace's administrators: Quarterly numbers"
	for name, tc := range map[string]struct {
		role         string // of the Principal who asked, in the workspace; none: a Member would do the same
		readQuestion bool   // the question's notification was read before the escalation
		titles       []string
		attention    []bool
		unread       []bool // question, reminder
	}{
		"a Member who read neither the question nor its reminder is told once": {
			role: "Member", titles: []string{news, news}, attention: []bool{false, false}, unread: []bool{true, false}},
		"a Member who read the question is told by its reminder": {
			role: "Member", readQuestion: true, titles: []string{news, news}, attention: []bool{false, false}, unread: []bool{false, true}},
		"a Principal with no role in the workspace is told as a Member": {
			titles: []string{news, news}, attention: []bool{false, false}, unread: []bool{true, false}},
		"an Admin who asked is still asked": {
			role: "Admin", titles: []string{"A question is waiting: Quarterly numbers", "Reminder: A question is waiting: Quarterly numbers"},
			attention: []bool{true, true}, unread: []bool{true, true}},
	} {
		t.Run(name, func(t *testing.T) {
			storetest.ForEachDialect(t, func(t *testing.T, s *store.Store) {
				g := NewWithT(t)
				ctx := context.Background()
				w, places := workAndPlaces(s)
				clock := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
				now := func() time.Time { return clock }
				w.Clock, places.Clock = now, now
				if tc.role != "" {
					member(g, s, "p1", tc.role)
				}
				_, run := submitAutonomous(g, w)
				_, err := w.Claim(ctx, "worker-1", time.Minute)
				g.Expect(err).NotTo(HaveOccurred())
				_, err = w.Apply(ctx, run.ID, "worker-1", work.Transition{State: work.StateRunning, Suspend: &work.Suspension{Step: "why", Kind: work.KindText,
					Prompt: "Why?", Continuation: "why", TTL: time.Minute, RemindBefore: 20 * time.Second, OnExpiry: work.FallbackEscalate}})
				g.Expect(err).NotTo(HaveOccurred())
				clock = clock.Add(45 * time.Second)
				_, err = w.RemindPendingActions(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				// mine are p1's question and reminder notifications, in that order, and p1's
				// unread count, which must agree with them.
				mine := func() ([]Notification, int) {
					list, unread, err := places.Notifications(ctx, "ws-a", "p1", 50)
					g.Expect(err).NotTo(HaveOccurred())
					var question, reminder *Notification
					counted := 0
					for i, n := range list {
						if n.ReadAt.IsZero() {
							counted++
						}
						switch {
						case n.PendingActionID == "" || strings.HasPrefix(n.Title, "Escalated: "):
						case question == nil || n.CreatedAt.Before(question.CreatedAt):
							question, reminder = &list[i], question
						default:
							reminder = &list[i]
						}
					}
					g.Expect(unread).To(Equal(counted), "the unread count is exact: %v", list)
					g.Expect(question).NotTo(BeNil())
					g.Expect(reminder).NotTo(BeNil())
					return []Notification{*question, *reminder}, unread
				}
				asked, _ := mine()
				g.Expect(asked[1].Title).To(HavePrefix("Reminder: "))
				if tc.readQuestion {
					_, err = places.MarkRead(ctx, "ws-a", "p1", asked[0].ID)
					g.Expect(err).NotTo(HaveOccurred())
				}
				g.Expect(places.NumberEvents(ctx)).To(Succeed())
				before, err := places.Events(ctx, "ws-a", 0, 500)
				g.Expect(err).NotTo(HaveOccurred())

				clock = clock.Add(20 * time.Second)
				_, err = w.ExpirePendingActions(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				escalated, _ := mine()
				for i, n := range escalated {
					g.Expect(n.Title).To(Equal(tc.titles[i]))
					g.Expect(n.Attention).To(Equal(tc.attention[i]), n.Title)
					g.Expect(n.ReadAt.IsZero()).To(Equal(tc.unread[i]), "unread: %s", n.Title)
					g.Expect(n.Version).To(BeNumerically(">", asked[i].Version), "its pages read it again")
				}
				// Every page of p1 is told what changed.
				g.Expect(places.NumberEvents(ctx)).To(Succeed())
				events, err := places.Events(ctx, "ws-a", before[len(before)-1].Seq, 500)
				g.Expect(err).NotTo(HaveOccurred())
				updated := map[string]map[string]any{}
				for _, e := range events {
					var p map[string]any
					g.Expect(json.Unmarshal(e.Payload, &p)).To(Succeed())
					if e.Name == EventNotificationUpdated && e.PrincipalID == "p1" {
						updated[p["notificationId"].(string)] = p
					}
				}
				for i, n := range escalated {
					g.Expect(updated).To(HaveKey(n.ID))
					if !tc.attention[i] {
						g.Expect(updated[n.ID]).To(HaveKeyWithValue("attention", false))
					}
				}

				// Once the question ends (here its second expiry, which fails the run and says so
				// in a notification of its own), nothing of it stays unread, and the count, still
				// exact, counted each of its notifications out once.
				clock = clock.Add(time.Minute)
				_, err = w.ExpirePendingActions(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				ended, _ := mine()
				for _, n := range ended {
					g.Expect(n.Resolution).To(Equal(ResolutionExpired))
					g.Expect(n.ReadAt.IsZero()).To(BeFalse(), "read once it ended: %s", n.Title)
				}
			})
		})
	}
}
