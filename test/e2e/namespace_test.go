package e2e

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestDeletingANamespaceDeletesItsAgents(t *testing.T) {
	s := shared(t)
	g := NewWithT(t)
	const namespace, agent = "doomed", "doomed-agent"

	r := s.kubectl("create", "namespace", namespace)
	g.Expect(r.ExitCode).To(Equal(0), r.String())
	g.Expect(r.Stdout).To(Equal("namespace/" + namespace + " created\n"))
	s.mustKubectl(t, "apply", "-f", writeManifest(t, sampleAgent(t, agent, namespace)))

	// kubectl waits until the namespace is gone, which is after its contents are.
	r = s.kubectl("delete", "namespace", namespace, "--timeout=30s")
	g.Expect(r.ExitCode).To(Equal(0), r.String())
	g.Expect(r.Took).To(BeNumerically("<", 30*time.Second), r.String())

	r = s.kubectl("get", "namespace", namespace)
	g.Expect(r.ExitCode).To(Equal(1), r.String())
	g.Expect(r.Stderr).To(ContainSubstring(`namespaces "`+namespace+`" not found`), r.String())

	// kubectl reports the missing namespace rather than the agent when both are gone.
	r = s.kubectl("get", "agent", agent, "--namespace", namespace)
	g.Expect(r.ExitCode).To(Equal(1), r.String())
	g.Expect(r.Stderr).To(ContainSubstring("(NotFound)"), r.String())

	// A namespace of the same name starts empty: the agent was deleted, not just hidden.
	s.mustKubectl(t, "create", "namespace", namespace)
	t.Cleanup(func() { s.kubectl("delete", "namespace", namespace, "--wait=false") })
	r = s.kubectl("get", "agents", "--namespace", namespace, "-o", "name")
	g.Expect(r.ExitCode).To(Equal(0), r.String())
	g.Expect(r.Stdout).To(BeEmpty(), r.String())

	all := s.mustKubectl(t, "get", "agents", "--all-namespaces", "-o", "custom-columns=NS:.metadata.namespace", "--no-headers")
	g.Expect(strings.Fields(all)).NotTo(ContainElement(namespace))
}
