package service_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/packs"
	"platform.dev/platform/apiserver/packs/packstest"
	"platform.dev/platform/internal/pack"
	"platform.dev/platform/internal/resourcenamespace"
)

// liveObject is the object kind/name of a kube namespace as the kube API has it.
func liveObject(g Gomega, namespace, kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(platformv1.GroupVersion.WithKind(kind))
	g.ExpectWithOffset(1, kube.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, u)).To(Succeed(), "%s/%s in %s", kind, name, namespace)
	return u
}

// A Pack composed in one workspace and installed into another, empty one carries its resources
// unchanged: every installed object has the fingerprint of the object it was composed from, and
// the InstalledPack records that same fingerprint as installed.
func TestAComposedPackInstalledIntoAnEmptyWorkspaceHasItsSourceResourcesFingerprints(t *testing.T) {
	g := NewWithT(t)
	db := storeFor(t)
	e := newIdentityEnv(t, db)
	runPackController(t, &packs.Store{DB: db}, nil)
	source, target := e.ws.RouteName, e.workspace("empty").RouteName
	in := func(ws, method, path, body string, headers ...string) response {
		return e.do(e.adminCookie, method, path, body, append(headers, httpapi.WorkspaceHeader, ws)...)
	}
	for _, c := range []struct{ path, body string }{
		{"/api/agents", agentBody("greeter", "Greeter")},
		{"/api/flows", directFlowBody("greet", "greeter", "Greets whoever asks")},
		{"/api/entries", entryBody("hello", "Hello", `{"agent":{"name":"greeter"}}`)},
	} {
		r := in(source, http.MethodPost, c.path, c.body)
		g.Expect(r.status).To(BeNumerically("<", 300), "%s: %v", c.path, r.body)
	}

	created := in(source, http.MethodPost, "/api/pack-projects",
		`{"publisher":"acme","name":"greeting-kit","version":"1.0.0","selection":["Entry/hello","Flow/greet"]}`)
	g.Expect(created.status).To(Equal(http.StatusCreated), "%v", created.body)
	g.Expect(created.body).To(HaveKeyWithValue("automatic", ConsistOf("Agent/greeter")))
	archive := in(source, http.MethodGet, created.body["archiveUrl"].(string), "")
	g.Expect(archive.status).To(Equal(http.StatusOK))

	g.Expect(in(target, http.MethodGet, "/api/packs", "").body["items"]).To(BeEmpty(), "the target workspace starts empty")
	installed := in(target, http.MethodPost, "/api/packs", archive.raw, "Content-Type", "application/zip")
	g.Expect(installed.status).To(Equal(http.StatusCreated), installed.raw)
	g.Expect(installed.body).To(HaveKeyWithValue("state", "installed"))
	g.Expect(installed.body["resources"]).To(HaveLen(3))

	packNamespace := resourcenamespace.KubeName(target, "acme.greeting-kit")
	for _, r := range installed.body["resources"].([]any) {
		view := r.(map[string]any)
		kind, name := view["kind"].(string), view["name"].(string)
		want := pack.Fingerprint(liveObject(g, source, kind, name).Object)
		g.Expect(pack.Fingerprint(liveObject(g, packNamespace, kind, name).Object)).To(Equal(want), "%s/%s installed as composed", kind, name)
		g.Expect(view["fingerprint"]).To(Equal(string(want)), "%s/%s: the record's installed fingerprint", kind, name)
		g.Expect(view).To(HaveKeyWithValue("condition", "managed"))
	}
}

// generatedPacks is how many generated Packs the preview/install equivalence test drives (about
// 0.7 s a Pack on 2 shared cores, mostly installs and the controller settling; the e2e package
// runs beside it for longer).
const generatedPacks = 200

// genResource is the manifest of Agent or Flow name; variant changes its content (a new version
// of the Pack changing that resource). Flows target a-0, which every generated version carries.
func genResource(key string, variant int) string {
	kind, name, _ := strings.Cut(key, "/")
	if kind == "Agent" {
		return packstest.Agent(name, fmt.Sprintf("Answer briefly (%d).", variant))
	}
	return fmt.Sprintf("apiVersion: platform/v1\nkind: Flow\nmetadata:\n  name: %s\ndefinition:\n  flowKind: Direct\n  displayName: %s %d\n"+
		"  version: 1.0.0\n  enabled: true\n  target:\n    kind: Agent\n    id: a-0\n", name, name, variant)
}

func genPack(name, version string, resources map[string]int) packstest.Pack {
	p := packstest.Pack{Publisher: "gen", Name: name, Version: version, Resources: map[string]string{}}
	for key, variant := range resources {
		kind, n, _ := strings.Cut(key, "/")
		p.Resources[strings.ToLower(kind)+"s/"+n+".yaml"] = genResource(key, variant)
	}
	return p
}

// genKeys are the resources generated Packs choose from.
var genKeys = []string{"Agent/a-0", "Agent/a-1", "Agent/a-2", "Agent/a-3", "Agent/a-4", "Flow/f-0", "Flow/f-1"}

// Preview is the contract of install: for generated Packs (1 to 5 resources) against generated
// workspace states (nothing installed; an earlier version installed; a resource a person changed
// since; an object of the Pack's namespace the Pack does not own), previewing changes no
// resourceVersion, a conflict in preview is a refusal that writes nothing, and otherwise the
// install makes exactly the previewed change set: created objects appear, updated ones get a new
// resourceVersion, unchanged ones keep theirs, removed ones are gone, and nothing else moves.
func TestPreviewIsTheChangeSetInstallMakesAndWritesNothing(t *testing.T) {
	g := NewWithT(t)
	db := storeFor(t)
	e := newIdentityEnv(t, db)
	runPackController(t, &packs.Store{DB: db}, nil)
	workspaces := []string{e.ws.RouteName}
	for i := 0; i < 4; i++ {
		workspaces = append(workspaces, e.workspace(fmt.Sprintf("gen%d", i)).RouteName)
	}
	seen := map[pack.Action]int{}
	// Where the time goes, in the log: the installs of the earlier version, the controller
	// settling, and the previews and installs compared.
	var setup, settle, compared time.Duration
	start := time.Now()
	for i := range generatedPacks {
		rng := rand.New(rand.NewPCG(24, uint64(i)))
		ws, name := workspaces[i%len(workspaces)], fmt.Sprintf("p%03d", i)
		id := "gen." + name
		namespace := resourcenamespace.KubeName(ws, platformv1.ResourceNamespace(id))
		in := func(method, path, body string, headers ...string) response {
			return e.do(e.adminCookie, method, path, body, append(headers, httpapi.WorkspaceHeader, ws)...)
		}
		pick := func(resources map[string]int, p float64) {
			for _, key := range genKeys {
				if len(resources) < 5 && rng.Float64() < p {
					resources[key] = 0
				}
			}
		}
		v1 := map[string]int{"Agent/a-0": 0}
		pick(v1, 0.4)
		state := rng.IntN(4) // 0: nothing installed; 1: v1 installed; 2: and a person's edit; 3: and an unowned object
		mark := time.Now()
		if state > 0 {
			r := in(http.MethodPost, "/api/packs", string(genPack(name, "1.0.0", v1).Zip()), "Content-Type", "application/zip")
			g.Expect(r.status).To(Equal(http.StatusCreated), "%s: install of 1.0.0: %s", id, r.raw)
		}
		if state == 2 {
			keys := sortedKeys(v1)
			kind, n, _ := strings.Cut(keys[rng.IntN(len(keys))], "/")
			u := liveObject(g, namespace, kind, n)
			g.Expect(unstructured.SetNestedField(u.Object, "Changed by a person", "definition", "displayName")).To(Succeed())
			g.Expect(kube.Update(context.Background(), u)).To(Succeed())
		}
		if state == 3 {
			u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "a-4", "namespace": namespace},
				"definition": map[string]any{"displayName": "A person's", "handler": "chat"}}}
			u.SetGroupVersionKind(platformv1.GroupVersion.WithKind("Agent"))
			if _, ok := v1["Agent/a-4"]; !ok {
				g.Expect(kube.Create(context.Background(), u)).To(Succeed(), "%s: unowned a-4", id)
			}
		}
		v2 := map[string]int{}
		for key := range v1 {
			switch x := rng.Float64(); {
			case x < 0.2 && key != "Agent/a-0":
			case x < 0.6:
				v2[key] = 1
			default:
				v2[key] = 0
			}
		}
		pick(v2, 0.25)
		archive := string(genPack(name, "2.0.0", v2).Zip())

		// The controller records what it observes after an install or a person's edit; the
		// snapshot waits for it to be done, so that any later write is preview's or install's.
		setup += time.Since(mark)
		mark = time.Now()
		before := settledResourceVersions(t, ws, id)
		beforeView := withoutStatusWrites(t, ws, before)
		settle += time.Since(mark)
		mark = time.Now()
		preview := in(http.MethodPost, "/api/packs/preview", archive, "Content-Type", "application/zip")
		g.Expect(preview.status).To(Equal(http.StatusOK), "%s: %s", id, preview.raw)
		g.Expect(withoutStatusWrites(t, ws, resourceVersions(t, ws, id))).To(Equal(beforeView), "%s: preview changes no resourceVersion", id)
		actions := map[string]pack.Action{}
		conflict := false
		for _, c := range field(preview.body, "changeSet", "changes").([]any) {
			change := c.(map[string]any)
			action := pack.Action(change["action"].(string))
			actions[change["kind"].(string)+"/"+change["name"].(string)] = action
			seen[action]++
			conflict = conflict || action == pack.ActionConflict
		}

		installed := in(http.MethodPost, "/api/packs", archive, "Content-Type", "application/zip")
		after := resourceVersions(t, ws, id)
		compared += time.Since(mark)
		if conflict {
			expectProblem(g, installed, http.StatusConflict)
			g.Expect(after).To(Equal(before), "%s: a refused install writes nothing", id)
			continue
		}
		g.Expect(installed.status).To(BeElementOf(http.StatusOK, http.StatusCreated), "%s: %s", id, installed.raw)
		g.Expect(installed.body).To(HaveKeyWithValue("version", "2.0.0"), id)
		for key, action := range actions {
			was, existed := before[key]
			now, exists := after[key]
			switch action {
			case pack.ActionCreate:
				g.Expect(existed).To(BeFalse(), "%s: %s previewed as create existed", id, key)
				g.Expect(exists).To(BeTrue(), "%s: %s previewed as create was not created", id, key)
			case pack.ActionUpdate:
				g.Expect(exists).To(BeTrue(), "%s: %s previewed as update is gone", id, key)
				g.Expect(now).NotTo(Equal(was), "%s: %s previewed as update was not written", id, key)
			case pack.ActionUnchanged:
				g.Expect(now).To(Equal(was), "%s: %s previewed as unchanged was written", id, key)
			case pack.ActionRemove:
				g.Expect(exists).To(BeFalse(), "%s: %s previewed as remove is still there", id, key)
			default:
				t.Fatalf("%s: %s: unexpected action %q", id, key, action)
			}
		}
		for key, rv := range after {
			if _, planned := actions[key]; planned || strings.HasPrefix(key, "InstalledPack/") {
				continue
			}
			g.Expect(before).To(HaveKeyWithValue(key, rv), "%s: %s is in no previewed change, yet install wrote it", id, key)
		}
		for key := range before {
			if _, planned := actions[key]; !planned && !strings.HasPrefix(key, "InstalledPack/") {
				g.Expect(after).To(HaveKey(key), "%s: %s is in no previewed change, yet install removed it", id, key)
			}
		}
	}
	t.Logf("%d generated Packs previewed and installed in %s (earlier versions installed %s, settling %s, previews and installs compared %s); actions seen: %v",
		generatedPacks, time.Since(start).Round(time.Millisecond), setup.Round(time.Millisecond), settle.Round(time.Millisecond), compared.Round(time.Millisecond), seen)
	for _, a := range []pack.Action{pack.ActionCreate, pack.ActionUpdate, pack.ActionUnchanged, pack.ActionRemove, pack.ActionConflict} {
		g.Expect(seen).To(HaveKey(a), "the generated cases cover %q", a)
	}
}

// withoutStatusWrites is rvs with the InstalledPacks' resourceVersions replaced by their
// generations: the controller records what it observed at its own pace (a status write), while a
// write of preview would change a definition or a resource.
func withoutStatusWrites(t *testing.T, ws string, rvs map[string]string) map[string]string {
	t.Helper()
	ips := &platformv1.InstalledPackList{}
	if err := kube.List(context.Background(), ips, client.InNamespace(ws)); err != nil {
		t.Fatal(err)
	}
	out := maps.Clone(rvs)
	for _, ip := range ips.Items {
		if _, ok := out["InstalledPack/"+ip.Name]; ok {
			out["InstalledPack/"+ip.Name] = fmt.Sprintf("generation %d", ip.Generation)
		}
	}
	return out
}

// settledResourceVersions are resourceVersions(ws, id) once they stayed the same for 150 ms (at
// most 5 s): the InstalledPack controller has written what it observed.
func settledResourceVersions(t *testing.T, ws, id string) map[string]string {
	t.Helper()
	last, quiet := resourceVersions(t, ws, id), 0
	for deadline := time.Now().Add(5 * time.Second); quiet < 3 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		now := resourceVersions(t, ws, id)
		if maps.Equal(now, last) {
			quiet++
		} else {
			last, quiet = now, 0
		}
	}
	return last
}
