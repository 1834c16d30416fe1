package sourceregistry

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func TestValidateDefinition(t *testing.T) {
	tests := map[string]struct {
		def       platformv1.SourceRegistryDefinition
		wantField string
	}{
		"an https index is valid": {def: platformv1.SourceRegistryDefinition{IndexURL: "https://registry.example.com/v1/index.json"}},
		"an http index needs allowHttp": {
			def: platformv1.SourceRegistryDefinition{IndexURL: "http://registry.example.com/index.json"}, wantField: "definition.indexUrl",
		},
		"allowHttp allows an http index": {
			def: platformv1.SourceRegistryDefinition{IndexURL: "http://registry.example.com/index.json", EndpointPolicy: &platformv1.EndpointPolicy{AllowHTTP: true}},
		},
		"a relative index is refused": {def: platformv1.SourceRegistryDefinition{IndexURL: "/index.json"}, wantField: "definition.indexUrl"},
		"credentials in the URL are refused": {
			def: platformv1.SourceRegistryDefinition{IndexURL: "https://me:pw@registry.example.com/index.json"}, wantField: "definition.indexUrl",
		},
		"staticBearer needs a credential": {
			def:       platformv1.SourceRegistryDefinition{IndexURL: "https://registry.example.com/index.json", AuthenticationMode: platformv1.StaticBearerRegistryAuthentication},
			wantField: "definition.credential",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			errs := validateDefinition(&tt.def, field.NewPath("definition"))
			if tt.wantField == "" {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(errs).To(HaveLen(1))
			g.Expect(errs[0].Field).To(Equal(tt.wantField))
		})
	}
}

func TestSetReadyCondition(t *testing.T) {
	disabled := false
	tests := map[string]struct {
		enabled     *bool
		invalid     field.ErrorList
		fetched     bool
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		"a valid registration is Resolved": {wantStatus: metav1.ConditionTrue, wantReason: platformv1.ResolvedReason, wantMessage: "the registration of https://registry.example.com/index.json is valid; the index has not been fetched yet"},
		"a fetched registration does not say it was never fetched": {fetched: true, wantStatus: metav1.ConditionTrue, wantReason: platformv1.ResolvedReason,
			wantMessage: "the registration of https://registry.example.com/index.json is valid"},
		"a valid, disabled registration is Disabled": {enabled: &disabled, wantStatus: metav1.ConditionTrue, wantReason: platformv1.DisabledReason},
		"an invalid registration is InvalidDefinition": {
			invalid: field.ErrorList{field.Required(field.NewPath("definition", "credential"), "needed")}, wantStatus: metav1.ConditionFalse, wantReason: platformv1.InvalidDefinitionReason,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			registry := &platformv1.SourceRegistry{ObjectMeta: metav1.ObjectMeta{Generation: 1},
				Definition: platformv1.SourceRegistryDefinition{IndexURL: "https://registry.example.com/index.json", Enabled: tt.enabled}}
			if tt.fetched {
				registry.Status.LastSuccessTime = &metav1.Time{Time: time.Now()}
				registry.Status.CurrentObservationID = "01a21a28-fdc8-70e9-b744-2ed4efaa685d"
			}
			setReadyCondition(&scope{registry: registry, invalid: tt.invalid})
			c := meta.FindStatusCondition(registry.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			if tt.wantMessage != "" {
				g.Expect(c.Message).To(Equal(tt.wantMessage))
			}
		})
	}
}
