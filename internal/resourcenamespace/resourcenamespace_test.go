package resourcenamespace

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func TestKubeName(t *testing.T) {
	long := strings.Repeat("a", 60)
	tests := map[string]struct {
		workspace string
		rns       platformv1.ResourceNamespace
		want      string
	}{
		"default is the workspace's own namespace":          {workspace: "acme", rns: "default", want: "acme"},
		"an omitted resource namespace is the default one":  {workspace: "acme", rns: "", want: "acme"},
		"a pack namespace is readable and hashed":           {workspace: "acme", rns: "contoso.reports", want: "acme-contoso-reports-"},
		"a long pair is cut to a DNS label with its hash":   {workspace: long, rns: "contoso.reports", want: long[:52]},
		"pairs that join alike get different names (a-b/c)": {workspace: "a-b", rns: "c.d", want: "a-b-c-d-"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got := KubeName(tt.workspace, tt.rns)
			g.Expect(got).To(HavePrefix(tt.want))
			g.Expect(validation.IsDNS1123Label(got)).To(BeEmpty())
		})
	}
	NewWithT(t).Expect(KubeName("a-b", "c.d")).NotTo(Equal(KubeName("a", "b-c.d")), "distinct pairs never share a name")
	NewWithT(t).Expect(KubeName("acme", "x.y")).To(Equal(KubeName("acme", "x.y")), "the name is deterministic")
}
