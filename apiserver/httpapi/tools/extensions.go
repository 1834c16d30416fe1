package tools

import (
	"context"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/tools"
	"platform.dev/platform/apiserver/tools/aep"
)

// maxRedemptions bounds the redemptions served at once: the route is open to any extension,
// and each one reads the store and a Vault.
const maxRedemptions = 32

type redeemInput struct {
	Body struct {
		Capability string `json:"capability" minLength:"1" maxLength:"128" doc:"The capability the platform sent with a tool call"`
		Scope      string `json:"scope" minLength:"1" maxLength:"253" doc:"The scope of that call, as the invocation gave it"`
	}
}

type redeemOutput struct {
	CacheControl string `header:"Cache-Control"`
	Body         aep.RedeemResponse
}

// registerExtensions serves the redemption of extension Secret capabilities. It authenticates
// nothing but the capability itself: an extension has no identity at the platform, and gains
// no right to read any resource.
func (s *routes) registerExtensions() {
	slots := domain.NewSlots(maxRedemptions)
	huma.Register(s.API(), huma.Operation{
		OperationID: "redeem-extension-capability", Method: http.MethodPost, Path: aep.RedeemPath, Tags: []string{tagToolProviders},
		Summary: "Redeem a one-use Secret capability (extension protocol)",
		Description: "An extension of protocol " + aep.Version + " redeems here a capability that a tool call carried, with the " +
			"call's scope, and receives the value of the Secret its ToolProvider binds to the role. A capability is used by its " +
			"first redemption whatever the outcome, ends with its call or after its lifetime, and is refused (403) for another " +
			"scope; the grants of the Secret are evaluated again for the call's scope at redemption. The value is never logged.",
		MaxBodyBytes: 4 << 10,
		Errors:       []int{http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}, func(ctx context.Context, in *redeemInput) (*redeemOutput, error) {
		m, err := s.manager()
		if err != nil {
			return nil, err
		}
		if !slots.Acquire("") {
			return nil, huma.Error429TooManyRequests("too many capabilities are being redeemed at once; try again")
		}
		defer slots.Release("")
		role, value, err := m.Redeem(ctx, in.Body.Capability, in.Body.Scope)
		if errors.Is(err, domain.ErrCapabilityRefused) {
			return nil, huma.Error403Forbidden(err.Error())
		}
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return &redeemOutput{CacheControl: "no-store", Body: aep.RedeemResponse{Role: role, Value: value}}, nil
	})
}
