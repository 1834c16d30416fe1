package identity

import (
	"context"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/identity"
)

type bootstrapStateOutput struct {
	Body struct {
		Initialized bool `json:"initialized" doc:"Whether the first administrator exists; bootstrap is refused once it does."`
	}
}

type bootstrapInput struct {
	Body struct {
		Username      string `json:"username" minLength:"1" maxLength:"64" doc:"Username of the first administrator's local account."`
		Password      string `json:"password" maxLength:"1024" doc:"At least 12 characters with an uppercase letter, a lowercase letter, a digit and a non-alphanumeric character."`
		DisplayName   string `json:"displayName,omitempty" maxLength:"128" doc:"Display name; the username when empty."`
		TenantName    string `json:"tenantName" minLength:"1" maxLength:"128" doc:"Name of the initial Tenant."`
		WorkspaceName string `json:"workspaceName" minLength:"1" maxLength:"63" doc:"Route name of the initial Workspace: a DNS label, also the name of its namespace."`
	}
}

// SignedIn is the answer of a successful sign-in: who signed in and the workspace they act in.
// The session token is only in the Set-Cookie header.
type SignedIn struct {
	PrincipalID string `json:"principalId"`
	DisplayName string `json:"displayName"`
	Workspace   string `json:"workspace,omitempty" doc:"Route name of the caller's default workspace, when there is one."`
}

type signedInOutput struct {
	SetCookie http.Cookie `header:"Set-Cookie"`
	Body      SignedIn
}

type loginInput struct {
	Body struct {
		Username string `json:"username" maxLength:"256"`
		Password string `json:"password" maxLength:"1024"`
	}
}

type logoutInput struct {
	Session string `cookie:"platform-session" doc:"The session cookie."`
}

type logoutOutput struct {
	SetCookie http.Cookie `header:"Set-Cookie"`
}

// sessionCookie carries token until expires; an empty token clears the cookie.
func sessionCookie(ctx context.Context, sess domain.Session) http.Cookie {
	c := http.Cookie{Name: httpapi.SessionCookie, Value: sess.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: httpapi.OverTLS(ctx)}
	if sess.Token == "" {
		c.MaxAge = -1
	} else {
		c.Expires = sess.ExpiresAt
	}
	return c
}

var errNoLocalAccounts = huma.Error404NotFound("local accounts are not enabled on this server")

func (s *routes) registerAuth() {
	huma.Register(s.API(), huma.Operation{
		OperationID: "get-bootstrap-state", Method: http.MethodGet, Path: "/api/auth/bootstrap", Tags: []string{tagAuthentication},
		Summary: "Whether the instance was initialized with its first administrator",
	}, func(ctx context.Context, _ *struct{}) (*bootstrapStateOutput, error) {
		if s.Identity() == nil {
			return nil, errNoLocalAccounts
		}
		ok, err := s.Identity().Initialized(ctx)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := &bootstrapStateOutput{}
		out.Body.Initialized = ok
		return out, nil
	})

	huma.Register(s.API(), huma.Operation{
		OperationID: "bootstrap", Method: http.MethodPost, Path: "/api/auth/bootstrap", Tags: []string{tagAuthentication},
		Summary: "Create the first administrator, the initial Tenant and Workspace, and sign in",
		Description: "Anonymous, and only while the instance was never initialized: 409 afterwards. Creates the local " +
			"account, its Principal, the Platform administrator grant (no membership and no role), the Tenant and " +
			"the Workspace with its namespace, and sets the session cookie. When the namespace cannot be created, " +
			"everything is deleted again and the instance stays uninitialized.",
		DefaultStatus: http.StatusCreated,
		Errors:        []int{http.StatusConflict, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
	}, func(ctx context.Context, in *bootstrapInput) (*signedInOutput, error) {
		if s.Identity() == nil {
			return nil, errNoLocalAccounts
		}
		b := in.Body
		sess, p, ws, err := s.Identity().Bootstrap(ctx, domain.BootstrapRequest{
			Username: b.Username, Password: b.Password, DisplayName: b.DisplayName, TenantName: b.TenantName, WorkspaceName: b.WorkspaceName,
		}, s.ProvisionFirst)
		if err != nil {
			return nil, bootstrapProblem(err)
		}
		return &signedInOutput{SetCookie: sessionCookie(ctx, sess), Body: SignedIn{PrincipalID: p.ID, DisplayName: p.DisplayName, Workspace: ws.RouteName}}, nil
	})

	huma.Register(s.API(), huma.Operation{
		OperationID: "login-local", Method: http.MethodPost, Path: "/api/auth/local/login", Tags: []string{tagAuthentication},
		Summary: "Sign in with a local account",
		Description: "Sets the session cookie. A wrong password, an unknown username, a locked-out or a disabled " +
			"account all answer the same 401.",
		Errors: []int{http.StatusUnauthorized},
	}, func(ctx context.Context, in *loginInput) (*signedInOutput, error) {
		// Mode Oidc signs in through the OpenID Provider only.
		if s.Identity() == nil || s.Mode() == httpapi.ModeOidc {
			return nil, errNoLocalAccounts
		}
		sess, p, err := s.Identity().Login(ctx, in.Body.Username, in.Body.Password)
		if errors.Is(err, domain.ErrInvalidCredentials) || errors.Is(err, domain.ErrLockedOut) || errors.Is(err, domain.ErrAccountDisabled) {
			return nil, huma.Error401Unauthorized("sign-in failed: invalid username or password")
		}
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := &signedInOutput{SetCookie: sessionCookie(ctx, sess), Body: SignedIn{PrincipalID: p.ID, DisplayName: p.DisplayName}}
		if ws, err := s.Identity().DefaultWorkspace(ctx, p.ID); err == nil {
			out.Body.Workspace = ws.RouteName
		}
		return out, nil
	})

	logout := httpapi.Secured(huma.Operation{
		OperationID: "logout", Method: http.MethodPost, Path: "/api/auth/logout", Tags: []string{tagAuthentication},
		Summary:       "Sign out: end the session and clear its cookie",
		DefaultStatus: http.StatusNoContent,
	}, httpapi.PolicyInteractiveUser)
	logout.Security = []map[string][]string{{httpapi.CookieScheme: {}}}
	huma.Register(s.API(), logout, func(ctx context.Context, in *logoutInput) (*logoutOutput, error) {
		if s.Identity() == nil {
			return nil, errNoLocalAccounts
		}
		token := httpapi.SessionToken(ctx)
		if token == "" {
			// Only a signed-in browser session ends here (not a bearer token).
			return nil, huma.Error401Unauthorized("authentication required")
		}
		if err := s.Identity().Logout(ctx, token); err != nil {
			return nil, httpapi.Problem(err)
		}
		return &logoutOutput{SetCookie: sessionCookie(ctx, domain.Session{})}, nil
	})
}

// bootstrapProblem maps the errors of Bootstrap to Problem Details with the field at fault.
func bootstrapProblem(err error) error {
	var weak *domain.PasswordError
	switch {
	case errors.Is(err, domain.ErrAlreadyInitialized):
		return huma.Error409Conflict("the instance is already initialized")
	case errors.As(err, &weak):
		details := make([]error, 0, len(weak.Unmet))
		for _, rule := range weak.Unmet {
			details = append(details, &huma.ErrorDetail{Location: "body.password", Message: "the password needs " + rule})
		}
		return huma.Error422UnprocessableEntity("the password does not meet the rules", details...)
	case errors.Is(err, domain.ErrInvalidWorkspaceName):
		return huma.Error422UnprocessableEntity("the request body is invalid", &huma.ErrorDetail{Location: "body.workspaceName", Message: "a DNS label (lowercase letters, digits and -, at most 63 characters) not starting with kube- or platform-tenant- and other than platform-instance"})
	case errors.Is(err, domain.ErrInvalidTenantName):
		return huma.Error422UnprocessableEntity("the request body is invalid", &huma.ErrorDetail{Location: "body.tenantName", Message: "1 to 128 characters without control characters or surrounding spaces"})
	case errors.Is(err, domain.ErrInvalidUsername):
		return huma.Error422UnprocessableEntity("the request body is invalid", &huma.ErrorDetail{Location: "body.username", Message: "1 to 64 characters without control characters or surrounding spaces"})
	case errors.Is(err, domain.ErrProvisioningFailed):
		return httpapi.Unavailable("the workspace could not be provisioned; nothing was created, retry", err)
	}
	return httpapi.Problem(err)
}
