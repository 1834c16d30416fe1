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
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }
	refreshed := func(outcome string, lastSuccess *metav1.Time) platformv1.SourceRegistryStatus {
		return platformv1.SourceRegistryStatus{LastRefresh: &platformv1.RefreshSummary{Time: *at(time.Minute), Trigger: "scheduled",
			Outcome: platformv1.RefreshOutcome(outcome), ErrorCode: map[bool]string{true: "RegistryTimeout"}[outcome == "failed"]},
			LastSuccessTime: lastSuccess, CurrentObservationID: "obs-1"}
	}
	tests := map[string]struct {
		enabled     *bool
		invalid     field.ErrorList
		status      platformv1.SourceRegistryStatus
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
		wantStaleAt time.Time
	}{
		"a valid registration never refreshed is Resolved": {wantStatus: metav1.ConditionTrue, wantReason: platformv1.ResolvedReason, wantMessage: "not been fetched yet"},
		"a valid, disabled registration is Disabled":       {enabled: &disabled, wantStatus: metav1.ConditionTrue, wantReason: platformv1.DisabledReason},
		"an invalid registration is InvalidDefinition": {
			invalid: field.ErrorList{field.Required(field.NewPath("definition", "credential"), "needed")}, wantStatus: metav1.ConditionFalse, wantReason: platformv1.InvalidDefinitionReason,
		},
		"a registration whose last refresh failed is RefreshFailed, with its last-known-good kept": {
			status: refreshed("failed", at(time.Hour)), wantStatus: metav1.ConditionFalse, wantReason: platformv1.RefreshFailedReason, wantMessage: "failed with RegistryTimeout; the last-known-good observation is kept",
		},
		"a registration validated within staleAfter is Resolved until it turns stale": {
			status: refreshed("notModified", at(time.Hour)), wantStatus: metav1.ConditionTrue, wantReason: platformv1.ResolvedReason, wantMessage: "validated at",
			wantStaleAt: now.Add(23 * time.Hour),
		},
		"a registration not validated within staleAfter is Stale": {
			status: refreshed("succeeded", at(25*time.Hour)), wantStatus: metav1.ConditionFalse, wantReason: platformv1.StaleReason, wantMessage: "longer ago than staleAfter (24h0m0s)",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			registry := &platformv1.SourceRegistry{ObjectMeta: metav1.ObjectMeta{Generation: 1},
				Definition: platformv1.SourceRegistryDefinition{IndexURL: "https://registry.example.com/index.json", Enabled: tt.enabled}, Status: tt.status}
			staleAt := setReadyCondition(&scope{registry: registry, invalid: tt.invalid, now: now})
			c := meta.FindStatusCondition(registry.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(ContainSubstring(tt.wantMessage))
			g.Expect(staleAt).To(BeTemporally("==", tt.wantStaleAt))
		})
	}
}
