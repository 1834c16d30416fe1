// Package sourceregistries holds what the service keeps about Source registries beyond the
// SourceRegistry kind: the built-in official registration.
package sourceregistries

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/config"
)

// OfficialName is the name of the built-in registration: created only when absent, kept across
// restarts and upgrades, may be disabled or reconfigured, never deleted.
const OfficialName = "agentstration-official"

// OfficialIndexURLSetting is the setting of the official registration's index URL, read only
// when the registration is created; afterwards the registration is the administrator's.
const OfficialIndexURLSetting = "Platform:Sources:Registries:Official:IndexUrl"

// DefaultOfficialIndexURL is the official index when the setting is absent.
const DefaultOfficialIndexURL = "https://registry.agentstration.dev/v1/index.json"

// EnsureOfficial creates the official registration when it is absent. It is created disabled:
// the service must work offline, where the official index is unreachable and every refresh would
// only fail; a Platform administrator enables it. An existing registration (possibly disabled or
// reconfigured) is never changed.
func EnsureOfficial(ctx context.Context, kube client.Client, cfg *config.Config) error {
	reg := &platformv1.SourceRegistry{
		ObjectMeta: metav1.ObjectMeta{Name: OfficialName},
		Definition: platformv1.SourceRegistryDefinition{
			DisplayName: "Official Source registry",
			IndexURL:    cfg.GetOr(OfficialIndexURLSetting, DefaultOfficialIndexURL),
			Enabled:     ptr.To(false),
			TrustPolicy: platformv1.AuthoritativePolicy,
		},
	}
	err := kube.Create(ctx, reg)
	if err == nil || apierrors.IsAlreadyExists(err) {
		return nil
	}
	return fmt.Errorf("the official Source registry registration: %w", err)
}
