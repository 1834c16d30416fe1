package admission

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"platform.dev/platform/apis/platform/manifest"
	platformv1 "platform.dev/platform/apis/platform/v1"
)

// The rules' reads are tested against the control plane in test/e2e (admission_test.go), through
// kubectl and the service API; these tests cover what needs no server.

var (
	thePlatform   = &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
	administrator = &user.DefaultInfo{Name: "platform-admin", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
)

func flow(labels map[string]string) runtime.Object {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("platform.dev/v1")
	u.SetKind("Flow")
	u.SetNamespace("acme")
	u.SetName("answer")
	u.SetLabels(labels)
	return u
}

func attributes(resource string, op apiadmission.Operation, obj, old runtime.Object, u user.Info) apiadmission.Attributes {
	gvr := platformv1.GroupVersion.WithResource(resource)
	return apiadmission.NewAttributesRecord(obj, old, platformv1.GroupVersion.WithKind("Flow"), "acme", "answer", gvr, "", op, nil, false, u)
}

func TestOnlyThePlatformIsExemptFromTheRules(t *testing.T) {
	tests := map[string]struct {
		user user.Info
		want bool
	}{
		"the loopback identity of the control plane":            {user: thePlatform, want: true},
		"the administrator's certificate (system:masters)":      {user: administrator},
		"the service API's user (system:masters)":               {user: &user.DefaultInfo{Name: "platform:service-api", Groups: []string{user.SystemPrivilegedGroup}}},
		"a user named like the platform outside system:masters": {user: &user.DefaultInfo{Name: user.APIServerUser}},
		"no user": {},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(IsPlatform(tt.user)).To(Equal(tt.want))
		})
	}
}

func TestTheSystemManagedLabelIsSetChangedAndRemovedOnlyByThePlatform(t *testing.T) {
	managed := map[string]string{manifest.SystemManagedLabel: "true"}
	tests := map[string]struct {
		op       apiadmission.Operation
		obj, old runtime.Object
		refusal  string
	}{
		"creating a Flow with the label":              {op: apiadmission.Create, obj: flow(managed), refusal: "only the platform creates a system-managed Flow"},
		"creating a Flow with the label at false":     {op: apiadmission.Create, obj: flow(map[string]string{manifest.SystemManagedLabel: "false"}), refusal: "only the platform creates"},
		"setting the label on a user Flow":            {op: apiadmission.Update, obj: flow(managed), old: flow(nil), refusal: "only the platform sets, changes or removes it"},
		"changing a system-managed Flow":              {op: apiadmission.Update, obj: flow(managed), old: flow(managed), refusal: `Flow "answer" is system-managed`},
		"removing the label of a system-managed Flow": {op: apiadmission.Update, obj: flow(nil), old: flow(managed), refusal: `Flow "answer" is system-managed`},
		"deleting a system-managed Flow":              {op: apiadmission.Delete, old: flow(managed), refusal: `Flow "answer" is system-managed`},
		"creating a user Flow":                        {op: apiadmission.Create, obj: flow(map[string]string{"team": "support"})},
		"changing a user Flow":                        {op: apiadmission.Update, obj: flow(map[string]string{"team": "sales"}), old: flow(map[string]string{"team": "support"})},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			rules := New()
			err := rules.Validate(context.Background(), attributes("flows", tt.op, tt.obj, tt.old, administrator), nil)
			if tt.refusal == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			expectRefusal(g, err, tt.refusal)
			g.Expect(rules.Validate(context.Background(), attributes("flows", tt.op, tt.obj, tt.old, thePlatform), nil)).To(Succeed(), "the platform may")
		})
	}
}

func TestFlowVersionsAndPublishedEntriesAreWrittenOnlyByThePlatform(t *testing.T) {
	for _, resource := range []string{"flowversions", "publishedentries"} {
		for _, op := range []apiadmission.Operation{apiadmission.Create, apiadmission.Update, apiadmission.Delete} {
			t.Run(resource+" "+string(op), func(t *testing.T) {
				g := NewWithT(t)
				rules := New()
				expectRefusal(g, rules.Validate(context.Background(), attributes(resource, op, nil, nil, administrator), nil), "written only by the platform")
				g.Expect(rules.Validate(context.Background(), attributes(resource, op, nil, nil, thePlatform), nil)).To(Succeed())
			})
		}
	}
}

func TestDependencyProtectionFailsClosedUntilTheRulesCanRead(t *testing.T) {
	g := NewWithT(t)
	rules := New()
	for _, resource := range []string{"agents", "flows", "modelproviders"} {
		err := rules.Validate(context.Background(), attributes(resource, apiadmission.Delete, nil, flow(nil), administrator), nil)
		g.Expect(apierrors.IsServiceUnavailable(err)).To(BeTrue(), "%s: %v", resource, err)
		g.Expect(err.Error()).To(ContainSubstring("retry"))
	}
}

// expectRefusal checks err is the Forbidden of a rule: reason in its message and in a cause of
// type RuleRefusedCause, which the service API maps to 409.
func expectRefusal(g Gomega, err error, reason string) {
	g.ExpectWithOffset(1, apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
	g.ExpectWithOffset(1, err.Error()).To(ContainSubstring(reason))
	status := err.(apierrors.APIStatus).Status()
	g.ExpectWithOffset(1, status.Details.Causes).To(ContainElement(And(
		HaveField("Type", platformv1.RuleRefusedCause), HaveField("Message", ContainSubstring(reason)))))
}

func TestTheOfficialSourceRegistryCannotBeDeletedWithKubectl(t *testing.T) {
	registry := func(name string, op apiadmission.Operation) apiadmission.Attributes {
		gvr := platformv1.GroupVersion.WithResource("sourceregistries")
		return apiadmission.NewAttributesRecord(nil, nil, platformv1.GroupVersion.WithKind("SourceRegistry"), "", name, gvr, "", op, nil, false, administrator)
	}
	for name, tc := range map[string]struct {
		name    string
		op      apiadmission.Operation
		refused bool
	}{
		"deleting the official registration": {OfficialSourceRegistry, apiadmission.Delete, true},
		"reconfiguring the official one":     {OfficialSourceRegistry, apiadmission.Update, false},
		"deleting another registration":      {"mirror", apiadmission.Delete, false},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := New().Validate(context.Background(), registry(tc.name, tc.op), nil)
			if tc.refused {
				expectRefusal(g, err, "cannot be deleted")
			} else {
				g.Expect(err).To(Succeed())
			}
		})
	}
}

func TestAWorkspacesLimitAnnotationsAreWholeNumbers(t *testing.T) {
	namespace := func(annotations map[string]string) runtime.Object {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Namespace")
		u.SetName("acme")
		u.SetAnnotations(annotations)
		return u
	}
	for name, tc := range map[string]struct {
		annotations map[string]string
		invalid     string
	}{
		"a limit is accepted":              {annotations: map[string]string{"platform/requests-per-second": "50"}},
		"0 is no limit and accepted":       {annotations: map[string]string{"platform/token-runs-per-minute": "0"}},
		"other annotations are not limits": {annotations: map[string]string{"note": "fifty"}},
		"a word is refused with its path":  {annotations: map[string]string{"platform/runs-per-minute": "fifty"}, invalid: "metadata.annotations[platform/runs-per-minute]"},
		"a negative number is refused":     {annotations: map[string]string{"platform/token-requests-per-second": "-1"}, invalid: "metadata.annotations[platform/token-requests-per-second]"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
			a := apiadmission.NewAttributesRecord(namespace(tc.annotations), nil, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", "acme", gvr, "",
				apiadmission.Create, nil, false, administrator)
			err := New().Validate(context.Background(), a, nil)
			if tc.invalid == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.invalid))
		})
	}
}
