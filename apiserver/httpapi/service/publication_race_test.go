package service_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// TestAPublishedEntryIsNeverPinnedToAnAgentOrFlowDeletedWhileItWasPublished publishes an Entry
// while its Agent (or its Flow) is deleted, at the same moment, round after round: one of the two
// loses every time, so no PublishedEntry is left pinned to a dependency that no longer exists.
func TestAPublishedEntryIsNeverPinnedToAnAgentOrFlowDeletedWhileItWasPublished(t *testing.T) {
	const rounds = 100
	server := devServer(t)
	cases := map[string]struct {
		// prepare creates round i's dependency and its Entry, and answers the dependency's path.
		prepare func(g Gomega, in func(method, path, body string, headers ...string) response, i int) string
	}{
		"the Agent of an Agent-bound Entry": {prepare: func(g Gomega, in func(method, path, body string, headers ...string) response, i int) string {
			agent := fmt.Sprintf("racer-%d", i)
			g.Expect(in(http.MethodPost, "/api/agents", agentBody(agent, "Racer")).status).To(Equal(http.StatusCreated))
			g.Expect(in(http.MethodPost, "/api/entries", entryBody(fmt.Sprintf("race-%d", i), "Race", `{"agent":{"name":"`+agent+`"}}`)).status).To(Equal(http.StatusCreated))
			return "/api/agents/" + agent
		}},
		"the Flow of a Flow-bound Entry": {prepare: func(g Gomega, in func(method, path, body string, headers ...string) response, i int) string {
			flow := fmt.Sprintf("racer-%d", i)
			g.Expect(in(http.MethodPost, "/api/flows", directFlowBody(flow, "helper", "Races")).status).To(Equal(http.StatusCreated))
			g.Expect(in(http.MethodPost, "/api/flows/"+flow+"/versions", `{"version":"1.0.0","activate":true}`).status).To(Equal(http.StatusCreated))
			g.Expect(in(http.MethodPost, "/api/entries", entryBody(fmt.Sprintf("race-%d", i), "Race", `{"flow":{"name":"`+flow+`"}}`)).status).To(Equal(http.StatusCreated))
			return "/api/flows/" + flow
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, in := entryWorkspace(t, server)
			g.Expect(in(http.MethodPost, "/api/agents", agentBody("helper", "Helper")).status).To(Equal(http.StatusCreated))
			published, deleted := 0, 0
			for i := range rounds {
				dependency := tc.prepare(g, in, i)
				etag := in(http.MethodGet, dependency, "").header.Get("ETag")
				var publish, remove response
				var wg sync.WaitGroup
				wg.Go(func() { publish = in(http.MethodPost, fmt.Sprintf("/api/entries/race-%d/publish", i), "") })
				wg.Go(func() { remove = in(http.MethodDelete, dependency, "", "If-Match", etag) })
				wg.Wait()
				g.Expect(publish.status).To(BeElementOf(http.StatusOK, http.StatusUnprocessableEntity), "round %d: %v", i, publish.body)
				g.Expect(remove.status).To(BeElementOf(http.StatusNoContent, http.StatusConflict, http.StatusPreconditionFailed), "round %d: %v", i, remove.body)

				pinned := in(http.MethodGet, fmt.Sprintf("/api/entries/race-%d/published", i), "").status == http.StatusOK
				exists := in(http.MethodGet, dependency, "").status == http.StatusOK
				g.Expect(pinned && !exists).To(BeFalse(), "round %d: entry race-%d is published, pinned to %s, which was deleted (publish %d, delete %d)",
					i, i, dependency, publish.status, remove.status)
				g.Expect(publish.status == http.StatusOK && remove.status == http.StatusNoContent).To(BeFalse(),
					"round %d: the publication and the delete both succeeded", i)
				if pinned {
					published++
				}
				if !exists {
					deleted++
				}
			}
			t.Logf("%d rounds: %d publications won, %d deletes won", rounds, published, deleted)
		})
	}
}
