package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"platform.dev/platform/apiserver/packs/packstest"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/store/storetest"
	"platform.dev/platform/controllers/installedpack"
)

// packResources is N of the crash tests: the Pack's resources, each a step of the journal.
const packResources = 8

// postPack sends an archive to path; a connection the dying server drops is status 0.
func postPack(c serviceClient, path string, archive []byte) (int, map[string]any) {
	req, err := http.NewRequest(http.MethodPost, c.base+path, bytes.NewReader(archive))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/zip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return resp.StatusCode, out
}

// fingerprints are the installed fingerprints of a Pack's resources by name, once its
// operation is done and every resource matches what was installed.
func fingerprints(g Gomega, c serviceClient, id string) map[string]any {
	status, view := c.call(http.MethodGet, "/api/packs/"+id, "")
	g.Expect(status).To(Equal(http.StatusOK), "%v", view)
	g.Expect(view).To(HaveKeyWithValue("state", "installed"))
	op, _ := view["operation"].(map[string]any)
	g.Expect(op).To(HaveKeyWithValue("phase", "Done"))
	out := map[string]any{}
	for _, r := range view["resources"].([]any) {
		res := r.(map[string]any)
		g.Expect(res).To(HaveKeyWithValue("condition", "managed"))
		out[res["name"].(string)] = res["fingerprint"]
	}
	return out
}

// TestAPackOperationKilledAfterStepKFinishesAfterRestart installs (and then updates) a Pack of
// N resources with a server that exits abruptly right after it journaled step k (the fault
// injection of the InstalledPack controller), restarts it without the fault, and finds the Pack
// fully installed within 30 s with the fingerprints of an uninterrupted install.
func TestAPackOperationKilledAfterStepKFinishesAfterRestart(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		cs := &crashServer{t: t, dataDir: filepath.Join(t.TempDir(), "data")}
		if opts.DatabaseURL != "" {
			cs.args = []string{"--database-url", opts.DatabaseURL}
		}
		k := 1 + int(time.Now().UnixNano()%int64(packResources-1))
		t.Logf("the server exits after step %d of %d", k, packResources)
		faulty := append(slices.Clone(crashEnv), fmt.Sprintf("%s=%d", installedpack.ExitAfterStepEnv, k))
		v1 := packstest.Agents("acme", "crash", "1.0.0", packResources, "Answer briefly.")
		v2 := packstest.Agents("acme", "crash", "2.0.0", packResources, "Answer in detail.")
		// The references: the same resources, installed without a crash under another identity
		// (fingerprints leave the Pack's own labels and annotations out).
		ref1 := packstest.Agents("acme", "reference-one", "1.0.0", packResources, "Answer briefly.")
		ref2 := packstest.Agents("acme", "reference-two", "2.0.0", packResources, "Answer in detail.")

		c := cs.start()
		for _, p := range []packstest.Pack{ref1, ref2} {
			status, body := postPack(c, "/api/packs", p.Zip())
			g.Expect(status).To(Equal(http.StatusCreated), "%v", body)
		}
		var want1, want2 map[string]any
		g.Eventually(func(g Gomega) { want1 = fingerprints(g, c, "acme/reference-one") }).Should(Succeed())
		g.Eventually(func(g Gomega) { want2 = fingerprints(g, c, "acme/reference-two") }).Should(Succeed())
		g.Expect(want1).To(HaveLen(packResources))
		g.Expect(want1).NotTo(Equal(want2))
		cs.stop()

		for _, phase := range []struct {
			name string
			pack packstest.Pack
			want map[string]any
		}{{"install", v1, want1}, {"update", v2, want2}} {
			By := func(s string) { t.Logf("%s: %s", phase.name, s) }
			By("the faulty server exits after step k")
			cs.env = faulty
			c = cs.start()
			postPack(c, "/api/packs", phase.pack.Zip())
			select {
			case <-cs.current.exited:
			case <-time.After(60 * time.Second):
				t.Fatalf("%s: the server did not exit after step %d:\n%s", phase.name, k, cs.current.output())
			}
			cs.current.stopping.Store(true)
			g.Expect(cs.current.cmd.ProcessState.ExitCode()).To(Equal(3), "the fault injection ended it:\n%s", cs.current.output())

			By("restarted without the fault, it finishes the operation")
			cs.env = nil
			c = cs.start()
			g.Eventually(func(g Gomega) {
				g.Expect(fingerprints(g, c, "acme/crash")).To(Equal(phase.want))
			}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
			cs.stop()
		}
	})
}
