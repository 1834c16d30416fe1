package model

import (
	"fmt"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// setReadyCondition reports whether the model resolves: its ModelProvider exists
// (ModelProviderNotFound). Whether the provider still lists the model is availability, which
// discovery reports.
func setReadyCondition(s *scope) {
	def := &s.model.Definition
	if !s.providerFound {
		reconcileutil.SetReady(&s.model.Status.ResourceStatus, s.model.Generation, false, platformv1.ModelProviderNotFoundReason,
			fmt.Sprintf("definition.provider.name: ModelProvider %q not found", def.Provider.Name))
		return
	}
	reconcileutil.SetReady(&s.model.Status.ResourceStatus, s.model.Generation, true, platformv1.ResolvedReason,
		fmt.Sprintf("model %s of ModelProvider %q", def.ModelID, def.Provider.Name))
}
