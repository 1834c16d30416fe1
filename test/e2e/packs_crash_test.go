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

// packResources is N of the crash tests: the Pack's resources, each a step of the journal (the
// test cuts an install and an update after each of them).
const packResources = 3

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

// TestAPackOperationKilledAfterEachStepKFinishesAfterRestart installs (and then updates) Packs
// of N resources with a server that exits abruptly right after it journaled step k (the fault
// injection of the InstalledPack controller), for every k of 1..N, and finds each Pack fully
// installed within 30 s of the restart, with the fingerprints of an uninterrupted install. One
// data directory serves every k: each Pack is cut short by its own start (the fault names it),
// and the next start, faulty for another Pack only, finishes it.
func TestAPackOperationKilledAfterEachStepKFinishesAfterRestart(t *testing.T) {
	storetest.ForEachDialectOptions(t, func(t *testing.T, opts store.Options) {
		g := NewWithT(t)
		// A killed server does not give the controllers' Lease back: the short leader election of
		// the Trigger tests lets each restart take it over in seconds rather than 15.
		cs := &crashServer{t: t, dataDir: filepath.Join(t.TempDir(), "data"), args: slices.Clone(triggerArgs)}
		if opts.DatabaseURL != "" {
			cs.args = append(cs.args, "--database-url", opts.DatabaseURL)
		}
		began := time.Now()
		// The references: the same resources, installed without a crash under another identity
		// (fingerprints leave the Pack's own labels and annotations out).
		ref1 := packstest.Agents("acme", "reference-one", "1.0.0", packResources, "Answer briefly.")
		ref2 := packstest.Agents("acme", "reference-two", "2.0.0", packResources, "Answer in detail.")
		var want1, want2 map[string]any
		type cut struct {
			phase string
			k     int
			pack  packstest.Pack
			want  *map[string]any
		}
		var cuts []cut
		for _, phase := range []struct {
			name, version, instructions string
			want                        *map[string]any
		}{{"install", "1.0.0", "Answer briefly.", &want1}, {"update", "2.0.0", "Answer in detail.", &want2}} {
			for k := 1; k <= packResources; k++ {
				cuts = append(cuts, cut{phase.name, k, packstest.Agents("acme", fmt.Sprintf("crash-%d", k), phase.version, packResources, phase.instructions), phase.want})
			}
		}
		faulty := func(c cut) []string {
			return append(slices.Clone(crashEnv), fmt.Sprintf("%s=%d", installedpack.ExitAfterStepEnv, c.k),
				fmt.Sprintf("%s=acme.%s", installedpack.ExitPackEnv, c.pack.Name))
		}
		// finished checks, after a restart, that the operation cut short is carried out.
		finished := func(c serviceClient, prev cut) {
			g.Eventually(func(g Gomega) {
				g.Expect(fingerprints(g, c, "acme/"+prev.pack.Name)).To(Equal(*prev.want))
			}, 30*time.Second, 200*time.Millisecond).Should(Succeed(), "%s of %s, cut after step %d", prev.phase, prev.pack.Name, prev.k)
		}

		for i, cut := range cuts {
			cs.env = faulty(cut)
			c := cs.start()
			if i == 0 {
				for _, p := range []packstest.Pack{ref1, ref2} {
					status, body := postPack(c, "/api/packs", p.Zip())
					g.Expect(status).To(Equal(http.StatusCreated), "%v", body)
				}
				g.Eventually(func(g Gomega) { want1 = fingerprints(g, c, "acme/reference-one") }).Should(Succeed())
				g.Eventually(func(g Gomega) { want2 = fingerprints(g, c, "acme/reference-two") }).Should(Succeed())
				g.Expect(want1).To(HaveLen(packResources))
				g.Expect(want1).NotTo(Equal(want2))
			} else {
				finished(c, cuts[i-1])
			}
			t.Logf("%s: %s of %s: the server exits after step %d of %d", time.Since(began).Round(time.Second), cut.phase, cut.pack.Name, cut.k, packResources)
			postPack(c, "/api/packs", cut.pack.Zip())
			select {
			case <-cs.current.exited:
			case <-time.After(60 * time.Second):
				t.Fatalf("%s of %s: the server did not exit after step %d:\n%s", cut.phase, cut.pack.Name, cut.k, cs.current.output())
			}
			cs.current.stopping.Store(true)
			g.Expect(cs.current.cmd.ProcessState.ExitCode()).To(Equal(3), "the fault injection ended it:\n%s", cs.current.output())
		}
		cs.env = nil
		c := cs.start()
		finished(c, cuts[len(cuts)-1])
		for _, cut := range cuts {
			if cut.phase == "update" {
				g.Expect(fingerprints(g, c, "acme/"+cut.pack.Name)).To(Equal(want2), "%s stays updated", cut.pack.Name)
			}
		}
		cs.stop()
	})
}
