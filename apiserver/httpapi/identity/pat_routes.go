package identity

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/identity"
)

const tagPersonalAccessTokens = "Personal access tokens"

// PersonalAccessToken is the metadata of a personal access token. The token itself is only in
// the answer of its creation. The enum of Permissions is domain.PATAllowed (a test checks).
type PersonalAccessToken struct {
	ID          string     `json:"id" doc:"Stable id of the token; revoke it by this id."`
	Name        string     `json:"name" doc:"The name its owner gave it."`
	Prefix      string     `json:"prefix" doc:"The first characters of the token, which are not secret: enough to recognize it, not to use it."`
	PrincipalID string     `json:"principalId" doc:"The human Principal the token acts as."`
	WorkspaceID string     `json:"workspaceId" doc:"Id of the one Workspace the token reaches."`
	Workspace   string     `json:"workspace" doc:"Route name of the one Workspace the token reaches."`
	Permissions []string   `json:"permissions" nullable:"false" enum:"workspaces/read,resources/read,resources/write,resources/delete,runs/read,runs/execute,runs/delete" doc:"The allow-list. Effective rights are these intersected with the owner's live rights in the Workspace at each request."`
	Status      string     `json:"status" enum:"Active,Expired,Revoked" doc:"Whether the token authenticates requests now."`
	CreatedAt   time.Time  `json:"createdAt"`
	ExpiresAt   time.Time  `json:"expiresAt" doc:"The token fails from this instant on."`
	LastUsedAt  *time.Time `json:"lastUsedAt,omitempty" doc:"When the token last authenticated a request, to the minute; absent when never."`
	RevokedAt   *time.Time `json:"revokedAt,omitempty" doc:"When the token was revoked; absent when it was not."`
}

// CreatedPersonalAccessToken is the answer of a creation: the metadata and, this once, the token.
type CreatedPersonalAccessToken struct {
	PersonalAccessToken
	Token string `json:"token" doc:"The token, to send as 'Authorization: Bearer <token>'. It is shown only in this answer: the service keeps only its digest."`
}

// PersonalAccessTokenList is the metadata of a Principal's tokens.
type PersonalAccessTokenList struct {
	Items []PersonalAccessToken `json:"items" nullable:"false" doc:"Every token of the Principal, revoked and expired ones included, newest first."`
}

type patListOutput struct {
	Body PersonalAccessTokenList
}

// NewPersonalAccessToken is the body of a token creation.
type NewPersonalAccessToken struct {
	Name          string    `json:"name" minLength:"1" maxLength:"100" doc:"A name to recognize the token by, 1 to 100 characters without control characters or surrounding spaces."`
	Workspace     string    `json:"workspace,omitempty" maxLength:"63" doc:"Route name or id of the one Workspace the token reaches, which the caller must be able to access. Default: the caller's selected Workspace (X-Platform-Workspace header, selection cookie, first membership)."`
	Permissions   []string  `json:"permissions" nullable:"false" minItems:"1" maxItems:"7" enum:"workspaces/read,resources/read,resources/write,resources/delete,runs/read,runs/execute,runs/delete" doc:"The allow-list. A token never gains rights its owner lacks: effective rights are these intersected with the owner's live rights."`
	ExpiresAt     time.Time `json:"expiresAt,omitempty" doc:"When the token expires (RFC 3339): in the future and at most 365 days away. Give this or expiresInDays: an expiry is mandatory."`
	ExpiresInDays int       `json:"expiresInDays,omitempty" minimum:"1" maximum:"365" doc:"Expire the token this many days from now. Give this or expiresAt."`
}

type createPATInput struct {
	httpapi.WorkspaceInput
	SelectedWorkspace string `cookie:"platform-workspace" doc:"The workspace-selection cookie; the default Workspace of the token when neither the body nor the header names one."`
	Body              NewPersonalAccessToken
}

type createdPATOutput struct {
	CacheControl string `header:"Cache-Control" doc:"no-store: the answer holds the token."`
	Body         CreatedPersonalAccessToken
}

type patIDInput struct {
	TokenID string `path:"tokenId" maxLength:"64" doc:"Id of the token."`
}

type patPrincipalInput struct {
	PrincipalID string `path:"principalId" maxLength:"128" doc:"Id of the Principal."`
}

type principalPATInput struct {
	PrincipalID string `path:"principalId" maxLength:"128" doc:"Id of the Principal."`
	TokenID     string `path:"tokenId" maxLength:"64" doc:"Id of the token."`
}

var errNoPATs = huma.Error404NotFound("personal access tokens are not enabled on this server")

func (s *routes) registerPATs() {
	s.API().OpenAPI().Tags = append(s.API().OpenAPI().Tags, &huma.Tag{Name: tagPersonalAccessTokens,
		Description: "Personal access tokens: Workspace-scoped bearer tokens of a human Principal with a permission allow-list and a mandatory expiry. Managed only by a signed-in user (never with a token) and by Platform administrators."})
	own := "/api/identity/pat"
	others := "/api/identity/principals/{principalId}/pat"

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-personal-access-tokens", Method: http.MethodGet, Path: own, Tags: []string{tagPersonalAccessTokens},
		Summary:     "List the caller's personal access tokens",
		Description: "Metadata only: a token is never shown again after its creation.",
	}, httpapi.PolicyInteractiveUser), func(ctx context.Context, _ *struct{}) (*patListOutput, error) {
		caller, err := s.patOwner(ctx)
		if err != nil {
			return nil, err
		}
		return s.listPATs(ctx, caller.ID)
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "create-personal-access-token", Method: http.MethodPost, Path: own, Tags: []string{tagPersonalAccessTokens},
		Summary: "Create a personal access token for one Workspace",
		Description: "The answer holds the token, once: store it, the service keeps only its digest. The token acts as the " +
			"caller in one Workspace only, with at most the permissions of its allow-list and at most the caller's live rights there.",
		DefaultStatus: http.StatusCreated,
		Errors:        []int{http.StatusNotFound, http.StatusUnprocessableEntity},
	}, httpapi.PolicyInteractiveUser), func(ctx context.Context, in *createPATInput) (*createdPATOutput, error) {
		caller, err := s.patOwner(ctx)
		if err != nil {
			return nil, err
		}
		return s.createPAT(ctx, caller, in)
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "revoke-personal-access-token", Method: http.MethodDelete, Path: own + "/{tokenId}", Tags: []string{tagPersonalAccessTokens},
		Summary:       "Revoke one of the caller's personal access tokens",
		Description:   "The token fails from the next request on; work it already started goes on. Revoking a revoked token is no error.",
		DefaultStatus: http.StatusNoContent,
		Errors:        []int{http.StatusNotFound},
	}, httpapi.PolicyInteractiveUser), func(ctx context.Context, in *patIDInput) (*struct{}, error) {
		caller, err := s.patOwner(ctx)
		if err != nil {
			return nil, err
		}
		return nil, patProblem(s.Identity().RevokePAT(ctx, caller.ID, caller.ID, in.TokenID))
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "revoke-all-personal-access-tokens", Method: http.MethodDelete, Path: own, Tags: []string{tagPersonalAccessTokens},
		Summary:       "Revoke every personal access token of the caller",
		DefaultStatus: http.StatusNoContent,
	}, httpapi.PolicyInteractiveUser), func(ctx context.Context, _ *struct{}) (*struct{}, error) {
		caller, err := s.patOwner(ctx)
		if err != nil {
			return nil, err
		}
		_, err = s.Identity().RevokeAllPATs(ctx, caller.ID, caller.ID)
		return nil, patProblem(err)
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-principal-personal-access-tokens", Method: http.MethodGet, Path: others, Tags: []string{tagPersonalAccessTokens},
		Summary:     "List another Principal's personal access tokens",
		Description: "Metadata only. For Platform administrators.",
		Errors:      []int{http.StatusNotFound},
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *patPrincipalInput) (*patListOutput, error) {
		if s.Identity() == nil {
			return nil, errNoPATs
		}
		return s.listPATs(ctx, in.PrincipalID)
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "revoke-principal-personal-access-token", Method: http.MethodDelete, Path: others + "/{tokenId}", Tags: []string{tagPersonalAccessTokens},
		Summary:       "Revoke one of another Principal's personal access tokens",
		Description:   "For Platform administrators. The token fails from the next request on.",
		DefaultStatus: http.StatusNoContent,
		Errors:        []int{http.StatusNotFound},
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *principalPATInput) (*struct{}, error) {
		caller, err := s.patAdministrator(ctx)
		if err != nil {
			return nil, err
		}
		return nil, patProblem(s.Identity().RevokePAT(ctx, caller.ID, in.PrincipalID, in.TokenID))
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "revoke-all-principal-personal-access-tokens", Method: http.MethodDelete, Path: others, Tags: []string{tagPersonalAccessTokens},
		Summary:       "Revoke every personal access token of another Principal",
		Description:   "For Platform administrators.",
		DefaultStatus: http.StatusNoContent,
		Errors:        []int{http.StatusNotFound},
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *patPrincipalInput) (*struct{}, error) {
		caller, err := s.patAdministrator(ctx)
		if err != nil {
			return nil, err
		}
		_, err = s.Identity().RevokeAllPATs(ctx, caller.ID, in.PrincipalID)
		return nil, patProblem(err)
	})
}

// patOwner is the caller of the routes on the caller's own tokens: a Principal of the identity
// store. The policy already refused personal access tokens.
func (s *routes) patOwner(ctx context.Context) (httpapi.Caller, error) {
	if s.Identity() == nil {
		return httpapi.Caller{}, errNoPATs
	}
	caller, ok := httpapi.CallerFrom(ctx)
	switch {
	case !ok:
		return httpapi.Caller{}, httpapi.ErrAuthenticationRequired
	case caller.ID == "":
		return httpapi.Caller{}, httpapi.ErrNoPrincipal
	case caller.Credential == httpapi.CredentialDevelopment:
		// The development caller is no Principal of the store: it cannot own tokens.
		return httpapi.Caller{}, patProblem(domain.ErrPATPrincipal)
	}
	return caller, nil
}

// patAdministrator is the caller of the administrators' routes, whom the policy checked.
func (s *routes) patAdministrator(ctx context.Context) (httpapi.Caller, error) {
	if s.Identity() == nil {
		return httpapi.Caller{}, errNoPATs
	}
	caller, _ := httpapi.CallerFrom(ctx)
	return caller, nil
}

func (s *routes) listPATs(ctx context.Context, principalID string) (*patListOutput, error) {
	tokens, err := s.Identity().ListPATs(ctx, principalID)
	if err != nil {
		return nil, patProblem(err)
	}
	now := s.identityNow()
	out := &patListOutput{}
	out.Body.Items = make([]PersonalAccessToken, 0, len(tokens))
	for _, t := range tokens {
		out.Body.Items = append(out.Body.Items, patBody(t, now))
	}
	return out, nil
}

func (s *routes) createPAT(ctx context.Context, caller httpapi.Caller, in *createPATInput) (*createdPATOutput, error) {
	b := in.Body
	now := s.identityNow()
	var details []error
	var permissions domain.Permissions
	for i, name := range b.Permissions {
		p, err := domain.ParsePermission(name)
		if err != nil || !domain.PATAllowed.Has(p) {
			details = append(details, &huma.ErrorDetail{Location: fmt.Sprintf("body.permissions[%d]", i),
				Message: "a personal access token allows only " + domain.PATAllowed.String()})
			continue
		}
		permissions |= domain.PermissionsOf(p)
	}
	expiresAt, expiryField := b.ExpiresAt, "body.expiresAt"
	switch {
	case !b.ExpiresAt.IsZero() && b.ExpiresInDays != 0:
		details = append(details, &huma.ErrorDetail{Location: "body.expiresInDays", Message: "give expiresAt or expiresInDays, not both"})
	case b.ExpiresAt.IsZero() && b.ExpiresInDays == 0:
		details = append(details, &huma.ErrorDetail{Location: "body.expiresAt", Message: "an expiry is mandatory: give expiresAt (RFC 3339) or expiresInDays"})
	case b.ExpiresInDays != 0:
		expiresAt, expiryField = now.Add(time.Duration(b.ExpiresInDays)*24*time.Hour), "body.expiresInDays"
	}
	if len(details) > 0 {
		return nil, huma.Error422UnprocessableEntity("the request body is invalid", details...)
	}

	// The Workspace: the body's, else the one the request selects, as workspace-scoped routes
	// choose it (header, selection cookie, first membership).
	explicit := b.Workspace
	if explicit == "" {
		explicit = in.Workspace
	}
	rc, err := s.IdentityContext(ctx, caller, explicit, in.SelectedWorkspace)
	if err != nil {
		var statusErr huma.StatusError
		if b.Workspace == "" && in.Workspace != "" || !errors.As(err, &statusErr) || statusErr.GetStatus() != http.StatusNotFound {
			return nil, err // a header naming no workspace of the caller is 404, as on every route
		}
		return nil, huma.Error422UnprocessableEntity("the request body is invalid", &huma.ErrorDetail{Location: "body.workspace",
			Message: "no Workspace of the caller has this route name or id; name one the caller can access"})
	}

	pat, token, err := s.Identity().CreatePAT(ctx, caller.ID, domain.NewPAT{
		PrincipalID: caller.ID, WorkspaceID: rc.WorkspaceID, Name: b.Name, Permissions: permissions, ExpiresAt: expiresAt,
	})
	if errors.Is(err, domain.ErrInvalidPATExpiry) {
		return nil, huma.Error422UnprocessableEntity("the request body is invalid", &huma.ErrorDetail{Location: expiryField,
			Message: "the expiry must be in the future and at most 365 days away"})
	}
	if err != nil {
		return nil, patProblem(err)
	}
	return &createdPATOutput{
		CacheControl: "no-store",
		Body:         CreatedPersonalAccessToken{PersonalAccessToken: patBody(pat, now), Token: token},
	}, nil
}

// patProblem maps the errors of the token operations to Problem Details.
func patProblem(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, domain.ErrPATNotFound):
		return huma.Error404NotFound("personal access token not found")
	case errors.Is(err, domain.ErrPrincipalNotFound):
		return huma.Error404NotFound("principal not found")
	case errors.Is(err, domain.ErrPATPrincipal):
		return huma.Error403Forbidden("personal access tokens are only for active human Principals")
	case errors.Is(err, domain.ErrInvalidPATName):
		return huma.Error422UnprocessableEntity("the request body is invalid", &huma.ErrorDetail{Location: "body.name",
			Message: fmt.Sprintf("1 to %d characters without control characters or surrounding spaces", domain.MaxPATNameLength)})
	case errors.Is(err, domain.ErrInvalidPATPermission):
		return huma.Error422UnprocessableEntity("the request body is invalid", &huma.ErrorDetail{Location: "body.permissions",
			Message: "one or more of " + domain.PATAllowed.String()})
	case errors.Is(err, domain.ErrWorkspaceNotFound):
		return huma.Error422UnprocessableEntity("the request body is invalid", &huma.ErrorDetail{Location: "body.workspace",
			Message: "no Workspace of the caller has this route name or id; name one the caller can access"})
	}
	return httpapi.Problem(err)
}

func patBody(t domain.PersonalAccessToken, now time.Time) PersonalAccessToken {
	out := PersonalAccessToken{
		ID: t.ID, Name: t.Name, Prefix: t.Prefix, PrincipalID: t.PrincipalID, WorkspaceID: t.WorkspaceID, Workspace: t.WorkspaceName,
		Permissions: []string{}, Status: t.Status(now), CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt,
	}
	for _, p := range t.Permissions.List() {
		out.Permissions = append(out.Permissions, string(p))
	}
	if !t.LastUsedAt.IsZero() {
		out.LastUsedAt = &t.LastUsedAt
	}
	if !t.RevokedAt.IsZero() {
		out.RevokedAt = &t.RevokedAt
	}
	return out
}

// now is the identity service's clock, so that expiries computed here agree with its checks.
func (s *routes) identityNow() time.Time {
	if s.Identity() != nil && s.Identity().Clock != nil {
		return s.Identity().Clock().UTC()
	}
	return time.Now().UTC()
}
