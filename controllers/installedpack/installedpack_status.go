package installedpack

import (
	"fmt"
	"strings"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// maxListed bounds how many missing resources the message names.
const maxListed = 8

// setReadyCondition says whether the installation is usable: an operation under way or failed,
// an uninstall that preserved resources, or a managed resource that is missing (each with its
// index in status.resources) make it not Ready.
func setReadyCondition(ip *platformv1.InstalledPack, missing []string) {
	status := &ip.Status.ResourceStatus
	gen := ip.Generation
	if op := ip.Status.Operation; op != nil {
		switch op.Phase {
		case platformv1.PackApplying, platformv1.PackCompensating:
			done := 0
			for _, s := range op.Steps {
				if s.Done {
					done++
				}
			}
			reconcileutil.SetReady(status, gen, false, platformv1.ReconcilingReason,
				fmt.Sprintf("%s %s: %d of %d steps done", op.Kind, strings.ToLower(string(op.Phase)), done, len(op.Steps)))
			return
		case platformv1.PackOperationFailed:
			msg := op.Error
			if op.FailedResource != "" {
				msg = op.FailedResource + ": " + msg
			}
			reconcileutil.SetReady(status, gen, false, platformv1.InstallFailedReason, fmt.Sprintf("%s of %s failed: %s", op.Kind, op.ToVersion, msg))
			return
		}
	}
	if ip.Status.State == platformv1.PackDegraded {
		var kept []string
		for _, p := range ip.Status.Preserved {
			kept = append(kept, fmt.Sprintf("%s %s (%s)", p.Kind, p.Name, p.Reason))
		}
		reconcileutil.SetReady(status, gen, false, platformv1.ResourcesPreservedReason, fmt.Sprintf("uninstall preserved %s; the namespace %s stays with them",
			strings.Join(kept, "; "), ip.Definition.Publisher+"."+ip.Definition.Name))
		return
	}
	if len(missing) > 0 {
		listed := missing
		if len(listed) > maxListed {
			listed = append(listed[:maxListed:maxListed], fmt.Sprintf("and %d more", len(missing)-maxListed))
		}
		reconcileutil.SetReady(status, gen, false, platformv1.ResourceNotFoundReason, strings.Join(listed, "; "))
		return
	}
	def := &ip.Definition
	reconcileutil.SetReady(status, gen, true, platformv1.ResolvedReason,
		fmt.Sprintf("%s.%s %s: all %d managed resources exist", def.Publisher, def.Name, ip.Status.InstalledVersion, len(ip.Status.Resources)))
}
