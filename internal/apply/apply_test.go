package apply_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"platform.dev/platform/apiserver/testenv"
	"platform.dev/platform/internal/apply"
)

var (
	env    *testenv.Env
	agents = schema.GroupVersionResource{Group: "platform.dev", Version: "v1", Resource: "agents"}
)

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start(context.Background(), testenv.Options{}); err != nil {
		panic(err)
	}
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

func run(t *testing.T, namespace string, paths ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = apply.Run(context.Background(), apply.Options{
		Paths: paths, Namespace: namespace, Dynamic: env.Dynamic,
		Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(env.Kube.Discovery())),
		Out:    &out, Err: &errOut,
	})
	return out.String(), errOut.String(), err
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const specSpelling = `apiVersion: platform/v1
kind: Agent
metadata:
  name: spec-spelling
  tags:
    team: support
definition:
  displayName: Spec spelling
---
# a comment-only document is skipped
---
apiVersion: platform.dev/v1
kind: Agent
metadata:
  name: kube-spelling
  labels:
    team: support
definition:
  displayName: Kube spelling
`

func TestApplyAcceptsBothSpellingsAndIsIdempotent(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	file := write(t, dir, "agents.yaml", specSpelling)

	out, errOut, err := run(t, "default", file)
	g.Expect(err).NotTo(HaveOccurred(), errOut)
	g.Expect(out).To(Equal("agent/spec-spelling created\nagent/kube-spelling created\n"))

	got, err := env.Dynamic.Resource(agents).Namespace("default").Get(context.Background(), "spec-spelling", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.GetLabels()).To(HaveKeyWithValue("team", "support"), "tags become labels")
	g.Expect(got.GetManagedFields()).To(ContainElement(HaveField("Manager", apply.FieldManager)))

	out, _, err = run(t, "default", file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("agent/spec-spelling unchanged\nagent/kube-spelling unchanged\n"))

	write(t, dir, "agents.yaml", strings.Replace(specSpelling, "displayName: Spec spelling", "displayName: Changed", 1))
	out, _, err = run(t, "default", file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("agent/spec-spelling configured\nagent/kube-spelling unchanged\n"))
}

func TestABadDocumentAppliesNothingFromItsFileAndNamesFileIndexAndField(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	bad := write(t, dir, "a-bad.yaml", `apiVersion: platform/v1
kind: Agent
metadata:
  name: before-the-bad-one
definition: {}
---
apiVersion: platform/v1
kind: Agent
metadata:
  name: bad-one
definition:
  modelProfile:
    name: a
    resourceId: b
`)
	write(t, dir, "b-good.yaml", `apiVersion: platform/v1
kind: Agent
metadata:
  name: in-a-good-file
definition: {}
`)
	out, errOut, err := run(t, "default", dir)
	g.Expect(err).To(HaveOccurred())
	g.Expect(errOut).To(ContainSubstring(bad + ": document 1: agent/bad-one: definition.modelProfile"))
	g.Expect(out).To(Equal("agent/in-a-good-file created\n"), "other files are still applied")

	_, err = env.Dynamic.Resource(agents).Namespace("default").Get(context.Background(), "before-the-bad-one", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing from the bad file was applied: %v", err)
}

func TestManifestsThatCannotBeResolvedAreRefusedWithTheirFieldPath(t *testing.T) {
	cases := map[string]struct {
		doc, want string
	}{
		"an unknown kind":             {"apiVersion: platform/v1\nkind: Gizmo\nmetadata:\n  name: g\n", "kind: Invalid value: \"Gizmo\""},
		"a missing name":              {"apiVersion: platform/v1\nkind: Agent\nmetadata: {}\n", "metadata.name: Required value"},
		"a foreign apiVersion":        {"apiVersion: apps/v1\nkind: Agent\nmetadata:\n  name: a\n", "apiVersion: Unsupported value"},
		"an unknown field":            {"apiVersion: platform/v1\nkind: Agent\nmetadata:\n  name: unknown-field\ndefinition:\n  colour: red\n", ".definition.colour: field not declared in schema"},
		"tags and labels both":        {"apiVersion: platform/v1\nkind: Agent\nmetadata:\n  name: a\n  tags: {}\n  labels: {}\n", "metadata.tags: Forbidden"},
		"a document that is not YAML": {"apiVersion: [\n", "document 0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			file := write(t, t.TempDir(), "m.yaml", tc.doc)
			out, errOut, err := run(t, "default", file)
			g.Expect(err).To(HaveOccurred())
			g.Expect(out).To(BeEmpty())
			g.Expect(errOut).To(ContainSubstring(tc.want))
		})
	}
}

func TestTheWorkspaceFlagSelectsTheNamespace(t *testing.T) {
	g := NewWithT(t)
	file := write(t, t.TempDir(), "a.yaml", "apiVersion: platform/v1\nkind: Agent\nmetadata:\n  name: in-public\ndefinition: {}\n")
	_, errOut, err := run(t, "kube-public", file)
	g.Expect(err).NotTo(HaveOccurred(), errOut)
	_, err = env.Dynamic.Resource(agents).Namespace("kube-public").Get(context.Background(), "in-public", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	conflicting := write(t, t.TempDir(), "b.yaml", "apiVersion: platform/v1\nkind: Agent\nmetadata:\n  name: x\n  namespace: default\ndefinition: {}\n")
	_, errOut, err = run(t, "kube-public", conflicting)
	g.Expect(err).To(HaveOccurred())
	g.Expect(errOut).To(ContainSubstring("metadata.namespace"))
}

func TestLargeFoldersShowProgress(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	for i := range 120 {
		write(t, dir, fmt.Sprintf("agent-%03d.yaml", i), fmt.Sprintf("apiVersion: platform/v1\nkind: Agent\nmetadata:\n  name: bulk-%03d\ndefinition: {}\n", i))
	}
	out, errOut, err := run(t, "default", dir)
	g.Expect(err).NotTo(HaveOccurred(), errOut)
	g.Expect(strings.Count(out, " created\n")).To(Equal(120))
	g.Expect(errOut).To(ContainSubstring("progress: 120/120 applied"))
}
