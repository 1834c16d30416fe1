package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/controllers"
)

// controllersStarted is what a replica logs when it holds the controllers' Lease.
const controllersStarted = "holding the leader election Lease; controllers start"

// TestARestartAfterSIGKILLOnTheEmbeddedEtcdStartsTheControllersAtOnce: the process that owns its
// data directory's etcd has no rival for the controllers' Lease, so its next start after a crash
// holds the Lease at once instead of waiting for the dead process's Lease to expire (15 s, during
// which no Trigger fires and no resource is reconciled).
func TestARestartAfterSIGKILLOnTheEmbeddedEtcdStartsTheControllersAtOnce(t *testing.T) {
	g := NewWithT(t)
	cs := &crashServer{t: t, dataDir: filepath.Join(t.TempDir(), "data"), args: []string{"--log-level", "info"}}
	started := func() bool {
		return strings.Contains(cs.current.stderr.String()+cs.current.stdout.String(), controllersStarted)
	}
	cs.start()
	g.Eventually(started, 30*time.Second, 50*time.Millisecond).Should(BeTrue(), "the first start holds the Lease")
	cs.sigkill()

	restarted := time.Now()
	cs.start()
	g.Eventually(started, 30*time.Second, 50*time.Millisecond).Should(BeTrue(), "the restart holds the Lease")
	g.Expect(time.Since(restarted)).To(BeNumerically("<", controllers.DefaultLeaseDuration/2),
		"the restart waited for the killed process's Lease:\n%s", cs.current.output())
	cs.stop()
}
