package e2e

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// A SIGTERM stops the process's parts before the kube API they read, and the kube API last: once
// work has run (its executor resolves Flows and agents through informers that watch the kube
// API), stopping cuts no watch of its own off, so the kube API has nothing to give up on.
func TestSIGTERMAfterWorkStopsTheKubeAPILastWithoutCuttingItsOwnWatches(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	cs := &crashServer{t: t, dataDir: filepath.Join(t.TempDir(), "data")}
	c := cs.start()
	t.Cleanup(cs.stop)
	setupReportFlow(c)
	run := submitReport(c, "before the stop")
	run.answer(c, "choice", `"value":"brief"`)
	run.answer(c, "confirmation", `"confirmed":true`)
	g.Expect(run.result(c)).To(HaveKeyWithValue("status", "Completed"))

	stopped := cs.current
	cs.current = nil
	code, took, err := stopped.stop()
	g.Expect(err).NotTo(HaveOccurred(), stopped.output())
	g.Expect(code).To(Equal(0), stopped.output())
	g.Expect(took).To(BeNumerically("<", stopTimeout), stopped.output())
	g.Expect(stopped.output()).NotTo(ContainSubstring("Failed to shutdown server"), "the kube API stopped with watches of this process still open")
}
