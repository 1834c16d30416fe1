package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/version"
)

func TestAPIResourcesListsEveryServedResource(t *testing.T) {
	s := shared(t)
	g := NewWithT(t)

	r := s.kubectl("api-resources", "--no-headers")
	g.Expect(r.ExitCode).To(Equal(0), r.String())

	// Columns: NAME [SHORTNAMES] APIVERSION NAMESPACED KIND; SHORTNAMES may be empty, so read
	// the others from both ends.
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		f := strings.Fields(line)
		g.Expect(len(f)).To(BeNumerically(">=", 4), "api-resources line %q", line)
		rows = append(rows, strings.Join([]string{f[0], f[len(f)-3], f[len(f)-2], f[len(f)-1]}, " "))
	}
	g.Expect(rows).To(ContainElements(
		"namespaces v1 false Namespace",
		"events v1 true Event",
		"events events.k8s.io/v1 true Event",
		"leases coordination.k8s.io/v1 true Lease",
		"customresourcedefinitions apiextensions.k8s.io/v1 false CustomResourceDefinition",
		"agents platform.dev/v1 true Agent",
	), r.String())
}

func TestExplainPrintsTheFieldsOfAResource(t *testing.T) {
	s := shared(t)
	cases := map[string]struct {
		path       string
		wantFields []string
	}{
		"the definition of an Agent (CRD schema)": {
			path:       "agents.definition",
			wantFields: []string{"description", "displayName", "handler", "instructions", "modelProfile", "tools"},
		},
		"a model profile reference (nested CRD schema)": {
			path:       "agents.definition.modelProfile",
			wantFields: []string{"name", "resourceId"},
		},
		"the spec of a Namespace (native OpenAPI)": {
			path:       "namespace.spec",
			wantFields: []string{"finalizers"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := s.kubectl("explain", tc.path)
			g.Expect(r.ExitCode).To(Equal(0), r.String())
			g.Expect(r.Stdout).To(ContainSubstring("FIELDS:"), r.String())
			fields := r.Stdout[strings.Index(r.Stdout, "FIELDS:"):]
			for _, field := range tc.wantFields {
				g.Expect(fields).To(MatchRegexp(`(?m)^\s+`+field+`\s+<`), "field %s in\n%s", field, r.Stdout)
			}
		})
	}
}

func TestSystemNamespacesExist(t *testing.T) {
	s := shared(t)
	g := NewWithT(t)

	r := s.kubectl("get", "namespaces", "-o", "name")
	g.Expect(r.ExitCode).To(Equal(0), r.String())
	g.Expect(strings.Fields(r.Stdout)).To(ContainElements(
		"namespace/default", "namespace/kube-system", "namespace/kube-public", "namespace/kube-node-lease"))
}

func TestServerVersionIsSemanticKubernetesVersion(t *testing.T) {
	s := shared(t)
	g := NewWithT(t)

	r := s.kubectl("version", "-o", "json")
	g.Expect(r.ExitCode).To(Equal(0), r.String())
	var out struct {
		ServerVersion *struct {
			Major      string `json:"major"`
			Minor      string `json:"minor"`
			GitVersion string `json:"gitVersion"`
		} `json:"serverVersion"`
	}
	g.Expect(json.Unmarshal([]byte(r.Stdout), &out)).To(Succeed(), r.String())
	g.Expect(out.ServerVersion).NotTo(BeNil(), r.String())

	v, err := version.ParseSemantic(out.ServerVersion.GitVersion)
	g.Expect(err).NotTo(HaveOccurred(), "gitVersion %q", out.ServerVersion.GitVersion)
	g.Expect(out.ServerVersion.GitVersion).To(HavePrefix("v"))
	g.Expect(v.Major()).To(BeEquivalentTo(1))
	// k8s.io/apiserver v0.37 implements Kubernetes 1.37; older would mean a wrong version source.
	g.Expect(v.Minor()).To(BeNumerically(">=", 37))
	g.Expect(out.ServerVersion.Major).To(Equal("1"))
	g.Expect(strings.TrimSuffix(out.ServerVersion.Minor, "+")).To(Equal(strings.Split(out.ServerVersion.GitVersion, ".")[1]))
}
