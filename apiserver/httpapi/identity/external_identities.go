package identity

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/identity"
)

// ExternalIdentity is the link of an OpenID Provider's user, the exact iss and sub of its tokens,
// to a Principal. Only Platform administrators see it.
type ExternalIdentity struct {
	ID          string    `json:"id" doc:"Id of the link."`
	Issuer      string    `json:"issuer" doc:"The exact, case-sensitive iss."`
	Subject     string    `json:"subject" doc:"The exact, case-sensitive sub."`
	PrincipalID string    `json:"principalId"`
	LinkedAt    time.Time `json:"linkedAt"`
}

func externalIdentityOf(e domain.ExternalIdentity) ExternalIdentity {
	return ExternalIdentity{ID: e.ID, Issuer: e.Issuer, Subject: e.Subject, PrincipalID: e.PrincipalID, LinkedAt: e.LinkedAt}
}

type principalInput struct {
	PrincipalID string `path:"principalId" maxLength:"128" doc:"Id of the Principal."`
}

type externalIdentityListOutput struct {
	Body struct {
		Items []ExternalIdentity `json:"items"`
	}
}

type linkExternalIdentityInput struct {
	PrincipalID string `path:"principalId" maxLength:"128" doc:"Id of the Principal."`
	// Issuer and subject carry no schema rules, not even required: huma's validation errors echo
	// the offending value (for a missing property, the whole body). The identity service checks
	// both, and its errors name only the field.
	Body struct {
		Issuer  string `json:"issuer" required:"false" doc:"Required. Absolute http(s) URL of printable ASCII, at most 1024 characters, without user information, query or fragment, exactly as the provider's tokens carry it in iss."`
		Subject string `json:"subject" required:"false" doc:"Required. 1 to 255 bytes, exactly as the provider's tokens carry it in sub; no control characters or surrounding whitespace."`
	}
}

type externalIdentityOutput struct {
	Status int
	Body   ExternalIdentity
}

type unlinkExternalIdentityInput struct {
	PrincipalID string `path:"principalId" maxLength:"128" doc:"Id of the Principal."`
	IdentityID  string `path:"identityId" maxLength:"128" doc:"Id of the link."`
}

func (s *routes) registerExternalIdentities() {
	const path = "/api/identity/principals/{principalId}/external-identities"
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-external-identities", Method: http.MethodGet, Path: path, Tags: []string{tagIdentity},
		Summary: "List the external identities linked to a Principal",
		Errors:  []int{http.StatusNotFound},
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *principalInput) (*externalIdentityListOutput, error) {
		if s.Identity() == nil {
			return nil, errNoIdentity
		}
		links, err := s.Identity().ListExternalIdentities(ctx, in.PrincipalID)
		if err != nil {
			return nil, externalIdentityProblem(err)
		}
		out := &externalIdentityListOutput{}
		out.Body.Items = make([]ExternalIdentity, 0, len(links))
		for _, l := range links {
			out.Body.Items = append(out.Body.Items, externalIdentityOf(l))
		}
		return out, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "link-external-identity", Method: http.MethodPost, Path: path, Tags: []string{tagIdentity},
		Summary: "Link an exact issuer and subject to a Principal",
		Description: "The Principal must exist, be active and be human. Linking the pair to the same Principal again " +
			"changes nothing (200); a pair linked to another Principal is a conflict (409). The Principal then signs in " +
			"through the OpenID Provider and its JWT bearer tokens resolve to it.",
		DefaultStatus: http.StatusCreated,
		Errors:        []int{http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity},
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *linkExternalIdentityInput) (*externalIdentityOutput, error) {
		if s.Identity() == nil {
			return nil, errNoIdentity
		}
		caller, _ := httpapi.CallerFrom(ctx)
		link, created, err := s.Identity().LinkExternalIdentity(ctx, caller.ID, in.PrincipalID, in.Body.Issuer, in.Body.Subject)
		if err != nil {
			return nil, externalIdentityProblem(err)
		}
		out := &externalIdentityOutput{Status: http.StatusOK, Body: externalIdentityOf(link)}
		if created {
			out.Status = http.StatusCreated
		}
		return out, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "unlink-external-identity", Method: http.MethodDelete, Path: path + "/{identityId}", Tags: []string{tagIdentity},
		Summary: "Unlink an external identity from a Principal",
		Description: "Takes effect on the next request: the sessions opened through the link end. The Principal's last " +
			"authentication method (a local account counts as one) cannot be unlinked (409).",
		DefaultStatus: http.StatusNoContent,
		Errors:        []int{http.StatusNotFound, http.StatusConflict},
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *unlinkExternalIdentityInput) (*struct{}, error) {
		if s.Identity() == nil {
			return nil, errNoIdentity
		}
		caller, _ := httpapi.CallerFrom(ctx)
		if err := s.Identity().UnlinkExternalIdentity(ctx, caller.ID, in.PrincipalID, in.IdentityID); err != nil {
			return nil, externalIdentityProblem(err)
		}
		return nil, nil
	})
}

var errNoIdentity = huma.Error404NotFound("the identity store is not enabled on this server")

// externalIdentityProblem maps the errors of external identity links to Problem Details. No
// message repeats the issuer or the subject.
func externalIdentityProblem(err error) error {
	switch {
	case errors.Is(err, domain.ErrInvalidIssuer):
		return huma.Error422UnprocessableEntity("the request body is invalid", &huma.ErrorDetail{Location: "body.issuer",
			Message: "an absolute http or https URL of printable ASCII, at most 1024 characters, without user information, query or fragment"})
	case errors.Is(err, domain.ErrInvalidSubject):
		return huma.Error422UnprocessableEntity("the request body is invalid", &huma.ErrorDetail{Location: "body.subject",
			Message: "1 to 255 bytes without control characters or surrounding whitespace"})
	case errors.Is(err, domain.ErrPrincipalNotFound):
		return huma.Error404NotFound("principal not found")
	case errors.Is(err, domain.ErrExternalIdentityNotFound):
		return huma.Error404NotFound("external identity not found for the principal")
	case errors.Is(err, domain.ErrPrincipalNotLinkable):
		return huma.Error409Conflict("only an active human Principal can be linked to an external identity")
	case errors.Is(err, domain.ErrExternalIdentityTaken):
		return huma.Error409Conflict("the issuer and subject are linked to another Principal")
	case errors.Is(err, domain.ErrLastAuthenticationMethod):
		return huma.Error409Conflict("the Principal's last authentication method cannot be unlinked")
	}
	return httpapi.Problem(err)
}
