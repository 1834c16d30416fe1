package workapi

import (
	"testing"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/workplace"
)

// A question told anew because it escalated is a PendingAction that changed, not one that was
// added: a watch of pendingactions sees it MODIFIED (its escalation), a new question ADDED.
func TestAnEscalatedQuestionIsAChangedPendingActionNotANewOne(t *testing.T) {
	for name, tc := range map[string]struct {
		payload string
		created bool
	}{
		"a new question":        {payload: `{"pendingActionId":"pa-1","taskId":"t-1"}`, created: true},
		"an escalated question": {payload: `{"pendingActionId":"pa-1","taskId":"t-1","escalated":true}`, created: false},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			changes := changesOf([]*resource{pendingActionsResource}, []workplace.Event{{Seq: 7, Name: workplace.EventPendingActionCreated, Payload: []byte(tc.payload)}})
			g.Expect(changes).To(HaveLen(1))
			g.Expect(changes[0].name).To(Equal("pa-1"))
			g.Expect(changes[0].created).To(Equal(tc.created))
		})
	}
}
