package tool

import (
	"fmt"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// setReadyCondition reports whether the tool's definition resolves: its ToolProvider exists
// (ToolProviderNotFound). Ready says the definition resolves, not that agents may call the tool:
// a disabled tool whose provider exists is Ready with reason Disabled, an enabled one Resolved.
// Agents that list a disabled tool report ToolDisabled themselves.
func setReadyCondition(s *scope) {
	def := &s.tool.Definition
	status := &s.tool.Status.ResourceStatus
	switch {
	case !s.providerFound:
		reconcileutil.SetReady(status, s.tool.Generation, false, platformv1.ToolProviderNotFoundReason,
			fmt.Sprintf("definition.provider.name: ToolProvider %q not found", def.Provider.Name))
	case !def.Enabled:
		reconcileutil.SetReady(status, s.tool.Generation, true, platformv1.DisabledReason,
			fmt.Sprintf("tool %s of ToolProvider %q is disabled; agents may not call it until definition.enabled is true", def.ToolName, def.Provider.Name))
	default:
		reconcileutil.SetReady(status, s.tool.Generation, true, platformv1.ResolvedReason,
			fmt.Sprintf("tool %s of ToolProvider %q is enabled", def.ToolName, def.Provider.Name))
	}
}
