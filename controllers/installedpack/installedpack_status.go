package installedpack

import (
	"fmt"
	"strings"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// maxListed bounds how many missing resources the message names.
const maxListed = 8

// setReadyCondition reports whether every managed resource exists (ResourceNotFound, each with
// its index in status.resources). An installation that lists no resources is Ready: there is
// nothing of it to lose.
func setReadyCondition(s *scope) {
	status := &s.pack.Status.ResourceStatus
	gen := s.pack.Generation
	if len(s.missing) > 0 {
		listed := s.missing
		if len(listed) > maxListed {
			listed = append(listed[:maxListed:maxListed], fmt.Sprintf("and %d more", len(s.missing)-maxListed))
		}
		reconcileutil.SetReady(status, gen, false, platformv1.ResourceNotFoundReason, strings.Join(listed, "; "))
		return
	}
	def := &s.pack.Definition
	reconcileutil.SetReady(status, gen, true, platformv1.ResolvedReason,
		fmt.Sprintf("%s.%s %s: all %d managed resources exist", def.Publisher, def.Name, def.Version, len(s.pack.Status.Resources)))
}
