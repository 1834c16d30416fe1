package dashboard

import (
	"fmt"
	"strings"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// olderDefault is the name of the default Dashboard among all that came before d (older
// creation, then lower name on a tie); "" when d is the first default. Only the newer defaults
// report DuplicateDefault: the workspace root keeps opening the oldest one, which works.
func olderDefault(d *platformv1.Dashboard, all []platformv1.Dashboard) string {
	first := ""
	var firstDashboard *platformv1.Dashboard
	for i := range all {
		o := &all[i]
		if !o.Definition.IsDefault || o.Name == d.Name || !before(o, d) {
			continue
		}
		if firstDashboard == nil || before(o, firstDashboard) {
			first, firstDashboard = o.Name, o
		}
	}
	return first
}

func before(a, b *platformv1.Dashboard) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// setReadyCondition reports whether the Dashboard can be shown as defined: every entry is
// published (EntryNotFound, with each reference's index) and it is not a second default
// (DuplicateDefault).
func setReadyCondition(s *scope) {
	status := &s.dashboard.Status.ResourceStatus
	gen := s.dashboard.Generation
	switch {
	case len(s.missing) > 0:
		parts := make([]string, 0, len(s.missing))
		for _, m := range s.missing {
			parts = append(parts, fmt.Sprintf("definition.entries[%d]: %s", m.index, m.problem))
		}
		reconcileutil.SetReady(status, gen, false, platformv1.EntryNotFoundReason, strings.Join(parts, "; "))
	case s.defaultDashboard != "":
		reconcileutil.SetReady(status, gen, false, platformv1.DuplicateDefaultReason,
			fmt.Sprintf("definition.isDefault: Dashboard %q is already the default of the workspace; the workspace root opens that one", s.defaultDashboard))
	default:
		reconcileutil.SetReady(status, gen, true, platformv1.ResolvedReason, fmt.Sprintf("shows %d published entries", len(s.dashboard.Definition.Entries)))
	}
}
