package e2e

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// samplesDir holds one sample per kind; kubectl applies its *.yaml files and skips the
// Kustomization file.
const samplesDir = "../../config/samples/"

func TestAppliedSamplesMakeEveryAgentReady(t *testing.T) {
	s := shared(t)
	g := NewWithT(t)
	// The other tests of the shared server apply the sample Agent into default themselves and
	// expect to create it: remove every sample again, and wait for it.
	t.Cleanup(func() {
		s.deleteEntriesThen(t, "default", []string{"support-request"}, "-f", samplesDir, "--wait=true")
	})

	r := s.kubectl("apply", "-n", "default", "-f", samplesDir)
	g.Expect(r.ExitCode).To(Equal(0), r.String())

	type condition struct {
		Type, Status, Reason, Message string
		ObservedGeneration            int64
	}
	type agentList struct {
		Items []struct {
			Metadata struct {
				Name       string
				Generation int64
			}
			Status struct {
				ObservedGeneration int64
				Conditions         []condition
			}
		}
	}
	g.Eventually(func(g Gomega) {
		var agents agentList
		g.Expect(json.Unmarshal([]byte(s.mustKubectl(t, "get", "agents", "-n", "default", "-o", "json")), &agents)).To(Succeed())
		g.Expect(agents.Items).NotTo(BeEmpty())
		for _, a := range agents.Items {
			g.Expect(a.Status.ObservedGeneration).To(Equal(a.Metadata.Generation), "agent %s", a.Metadata.Name)
			var ready *condition
			for i := range a.Status.Conditions {
				if a.Status.Conditions[i].Type == "Ready" {
					ready = &a.Status.Conditions[i]
				}
			}
			g.Expect(ready).NotTo(BeNil(), "agent %s has a Ready condition", a.Metadata.Name)
			g.Expect(ready.Status).To(Equal("True"), "agent %s: %s %s", a.Metadata.Name, ready.Reason, ready.Message)
		}
	}).WithTimeout(20 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}
