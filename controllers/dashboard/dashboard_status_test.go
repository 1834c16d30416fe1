package dashboard

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

func dashboard(name string, isDefault bool, created time.Time) platformv1.Dashboard {
	return platformv1.Dashboard{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Definition: platformv1.DashboardDefinition{IsDefault: isDefault}}
}

func TestOlderDefault(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	home, team, other := dashboard("home", true, t0), dashboard("team", true, t0.Add(time.Hour)), dashboard("other", false, t0.Add(-time.Hour))
	tests := map[string]struct {
		d    platformv1.Dashboard
		want string
	}{
		"the oldest default is the default":        {d: home},
		"a newer default names the older one":      {d: team, want: "home"},
		"a tie on creation goes to the lower name": {d: dashboard("zeta", true, t0), want: "home"},
		"a non-default Dashboard is no competitor": {d: home},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(olderDefault(&tt.d, []platformv1.Dashboard{home, team, other, tt.d})).To(Equal(tt.want))
		})
	}
}

func TestSetReadyCondition(t *testing.T) {
	tests := map[string]struct {
		scope       scope
		wantReason  string
		wantMessage string
	}{
		"published entries and one default are Resolved": {
			scope: scope{}, wantReason: platformv1.ResolvedReason, wantMessage: "shows 0 published entries",
		},
		"a missing entry is EntryNotFound with its index": {
			scope: scope{missing: []missingEntry{{1, "Entry support-request is not published"}}}, wantReason: platformv1.EntryNotFoundReason,
			wantMessage: "definition.entries[1]: Entry support-request is not published",
		},
		"a second default is DuplicateDefault": {
			scope: scope{defaultDashboard: "home"}, wantReason: platformv1.DuplicateDefaultReason,
			wantMessage: `definition.isDefault: Dashboard "home" is already the default of the workspace; the workspace root opens that one`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			d := dashboard("team", true, time.Now())
			tt.scope.dashboard = &d
			setReadyCondition(&tt.scope)
			c := meta.FindStatusCondition(d.Status.Conditions, platformv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(Equal(tt.wantMessage))
		})
	}
}
