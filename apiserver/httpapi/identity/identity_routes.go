package identity

import (
	"context"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/identity"
)

// Identity administration: local accounts, Platform administrator grants and the security audit
// log, for Platform administrators. The routes of the request context, preferences and the
// organization (Tenant, workspaces, memberships) are in identity_context.go and
// identity_organization.go.

// principalCaller is the caller of an identity route, which must be a Principal of the identity
// store.
func (s *routes) principalCaller(ctx context.Context) (httpapi.Caller, error) {
	if s.Identity() == nil {
		return httpapi.Caller{}, errNoIdentity
	}
	caller, ok := httpapi.CallerFrom(ctx)
	if !ok {
		return httpapi.Caller{}, httpapi.ErrAuthenticationRequired
	}
	if caller.ID == "" {
		return httpapi.Caller{}, httpapi.ErrNoPrincipal
	}
	return caller, nil
}

// exactPath refuses a request whose path only starts with the operation's path: a path that ends
// in / is a subtree pattern for net/http's ServeMux, and the spec's account list route does.
func exactPath(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		if u := ctx.URL(); u.Path != ctx.Operation().Path {
			httpapi.WriteError(api, ctx, huma.Error404NotFound("no route "+ctx.Method()+" "+u.Path))
			return
		}
		next(ctx)
	}
}

// LocalAccount is a local account and its Principal. The password hash, security stamp and
// lockout counters are never shown.
type LocalAccount struct {
	AccountID             string    `json:"accountId" doc:"Stable id of the local account."`
	PrincipalID           string    `json:"principalId" doc:"Id of the account's human Principal."`
	Username              string    `json:"username" doc:"Username, as spelled at creation (compared case-insensitively)."`
	DisplayName           string    `json:"displayName"`
	Email                 string    `json:"email,omitempty" doc:"Optional e-mail address; it plays no part in sign-in or identity resolution."`
	Status                string    `json:"status" enum:"Active,Disabled" doc:"Disabled accounts cannot sign in; their sessions ended when they were disabled."`
	PlatformAdministrator bool      `json:"platformAdministrator" doc:"Whether the Principal holds the Platform administrator grant (kept while disabled, effective again once enabled)."`
	CreatedAt             time.Time `json:"createdAt"`
}

func localAccountFrom(a domain.Account) LocalAccount {
	return LocalAccount{
		AccountID: a.AccountID, PrincipalID: a.PrincipalID, Username: a.Username, DisplayName: a.Principal.DisplayName,
		Email: a.Principal.Email, Status: a.Principal.Status, PlatformAdministrator: a.PlatformAdministrator, CreatedAt: a.CreatedAt,
	}
}

// InitialAccess is the access an account is created with.
type InitialAccess struct {
	WorkspaceID   string `json:"workspaceId" doc:"Id of the Workspace the account has its role in."`
	WorkspaceName string `json:"workspaceName" doc:"Route name of that Workspace."`
	TenantID      string `json:"tenantId" doc:"Id of the Workspace's Tenant, of which the account is now a member."`
	Role          string `json:"role" enum:"Owner,Admin,Member,Viewer"`
}

// CreatedLocalAccount is the answer to the creation of an account.
type CreatedLocalAccount struct {
	LocalAccount
	InitialAccess InitialAccess `json:"initialAccess"`
}

// maxPasswordLength bounds the work of hashing a submitted password.
const maxPasswordLength = 1024

// createAccountInput: the schema bounds the lengths (Problem Details never echo the value, see
// problems.go); the identity service checks the rest.
type createAccountInput struct {
	Body struct {
		Username    string `json:"username" minLength:"1" maxLength:"64" doc:"1 to 64 characters without control characters or surrounding spaces; unique, compared case-insensitively."`
		Password    string `json:"password" maxLength:"1024" doc:"Initial password: 12 to 1024 characters with an uppercase letter, a lowercase letter, a digit and a non-alphanumeric character."`
		DisplayName string `json:"displayName,omitempty" maxLength:"128" doc:"Display name; the username when empty."`
		Email       string `json:"email,omitempty" maxLength:"254" doc:"Optional e-mail address, at most 254 characters. It is never used to sign in or to resolve a Principal."`
		Workspace   string `json:"workspace" minLength:"1" maxLength:"63" doc:"The Workspace of the initial access: its id or route name. It must be active."`
		Role        string `json:"role" enum:"Owner,Admin,Member,Viewer" doc:"The role of the account in that Workspace."`
	}
}

type accountStatusInput struct {
	AccountID string `path:"accountId" maxLength:"64" doc:"Id of the local account."`
	Body      struct {
		Status string `json:"status" enum:"Active,Disabled" doc:"Active enables the account (clears its lockout); Disabled locks it indefinitely and ends its sessions."`
	}
}

// PlatformAdministrator is a Platform administrator grant and its Principal.
type PlatformAdministrator struct {
	PrincipalID string    `json:"principalId"`
	DisplayName string    `json:"displayName"`
	Kind        string    `json:"kind" enum:"Human,Workload"`
	Status      string    `json:"status" enum:"Active,Disabled" doc:"A disabled Principal keeps its grant but administers nothing until it is enabled again."`
	Active      bool      `json:"active" doc:"Whether the grant is in effect: the Principal is active."`
	GrantedAt   time.Time `json:"grantedAt"`
	GrantedBy   string    `json:"grantedBy,omitempty" doc:"Principal id of the administrator who granted it; absent for the bootstrap's grant."`
}

func platformAdministratorFrom(a domain.PlatformAdministrator) PlatformAdministrator {
	return PlatformAdministrator{
		PrincipalID: a.Principal.ID, DisplayName: a.Principal.DisplayName, Kind: a.Principal.Kind, Status: a.Principal.Status,
		Active: a.Principal.Status == domain.StatusActive, GrantedAt: a.GrantedAt, GrantedBy: a.GrantedBy,
	}
}

type principalPathInput struct {
	PrincipalID string `path:"principalId" maxLength:"64" doc:"Id of the Principal."`
}

// AuditEvent is one security audit record. It holds stable ids and bounded codes only: never a
// password, username, e-mail address, token or request detail.
type AuditEvent struct {
	ID            string    `json:"id"`
	OccurredAt    time.Time `json:"occurredAt"`
	Action        string    `json:"action" doc:"What happened, one of the spec's action names (local-account.login, platform-administrator.granted, ...)."`
	Outcome       string    `json:"outcome" enum:"success,failure"`
	ActorID       string    `json:"actorId,omitempty" doc:"Principal id of who acted; absent when anonymous."`
	TargetID      string    `json:"targetId,omitempty" doc:"Principal id of whom it concerned."`
	TenantID      string    `json:"tenantId,omitempty"`
	WorkspaceID   string    `json:"workspaceId,omitempty"`
	ReasonCode    string    `json:"reasonCode,omitempty" doc:"Bounded reason code of a failure, such as invalid-credentials or locked-out."`
	CorrelationID string    `json:"correlationId,omitempty" doc:"Trace correlation id of the request."`
}

type auditEventsInput struct {
	Limit int `query:"limit" minimum:"1" maximum:"200" default:"50" doc:"How many of the latest events to return: 50 unless given, at most 200."`
}

func (s *routes) registerAccounts() {
	list := httpapi.Secured(huma.Operation{
		OperationID: "list-local-accounts", Method: http.MethodGet, Path: "/api/identity/accounts/", Tags: []string{tagAccounts},
		Summary: "List the local accounts",
	}, httpapi.PolicyPlatformAdmin)
	list.Middlewares = huma.Middlewares{exactPath(s.API())}
	huma.Register(s.API(), list, func(ctx context.Context, _ *struct{}) (*httpapi.ListOutput[LocalAccount], error) {
		if _, err := s.principalCaller(ctx); err != nil {
			return nil, err
		}
		accounts, err := s.Identity().LocalAccounts(ctx)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := make([]LocalAccount, 0, len(accounts))
		for _, a := range accounts {
			out = append(out, localAccountFrom(a))
		}
		return httpapi.ItemsOutput(out), nil
	})

	create := httpapi.Secured(huma.Operation{
		OperationID: "create-local-account", Method: http.MethodPost, Path: "/api/identity/accounts/", Tags: []string{tagAccounts},
		Summary: "Create a local account with its initial access",
		Description: "Creates, in one step, an active human Principal, its local account, its membership of the Workspace's " +
			"Tenant and its role in the Workspace; audited as local-account.created and workspace-membership.set. " +
			"409 when the username is taken; 422 for a password that does not meet the rules (each unmet rule is listed) " +
			"and for invalid fields; 404 when the Workspace is not an active one. No error repeats the username, password " +
			"or e-mail address.",
		DefaultStatus: http.StatusCreated,
		Errors:        []int{http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity},
	}, httpapi.PolicyPlatformAdmin)
	create.Middlewares = huma.Middlewares{exactPath(s.API())}
	huma.Register(s.API(), create, func(ctx context.Context, in *createAccountInput) (*struct{ Body CreatedLocalAccount }, error) {
		caller, err := s.principalCaller(ctx)
		if err != nil {
			return nil, err
		}
		b := in.Body
		if utf8.RuneCountInString(b.Password) > maxPasswordLength {
			return nil, httpapi.BodyInvalid("password", "at most 1024 characters")
		}
		if err := checkEmail(b.Email); err != nil {
			return nil, err
		}
		acct, ws, err := s.Identity().CreateLocalAccountWithAccess(ctx, caller.ID,
			domain.NewLocalAccount{Username: b.Username, Password: b.Password, DisplayName: b.DisplayName, Email: b.Email},
			domain.InitialAccess{Workspace: b.Workspace, Role: domain.Role(b.Role)})
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return &struct{ Body CreatedLocalAccount }{Body: CreatedLocalAccount{
			LocalAccount:  localAccountFrom(acct),
			InitialAccess: InitialAccess{WorkspaceID: ws.ID, WorkspaceName: ws.RouteName, TenantID: ws.TenantID, Role: b.Role},
		}}, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "set-local-account-status", Method: http.MethodPut, Path: "/api/identity/accounts/{accountId}/status", Tags: []string{tagAccounts},
		Summary: "Enable or disable a local account",
		Description: "Disabled: the account is locked indefinitely, its security stamp rotated (its sessions fail at once) and its " +
			"Principal marked Disabled; a Platform administrator grant is kept. Active: the lockout is cleared and a kept grant " +
			"applies again. Idempotent. Rejected: disabling one's own account (422), disabling the last active Platform " +
			"administrator (409). Audited as local-account.disabled or local-account.enabled.",
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity},
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *accountStatusInput) (*struct{ Body LocalAccount }, error) {
		caller, err := s.principalCaller(ctx)
		if err != nil {
			return nil, err
		}
		acct, err := s.Identity().SetLocalAccountStatus(ctx, caller.ID, in.AccountID, in.Body.Status)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return &struct{ Body LocalAccount }{Body: localAccountFrom(acct)}, nil
	})
}

// checkEmail is a plausibility check of an optional e-mail address; its message does not repeat
// the address.
func checkEmail(email string) error {
	if email == "" {
		return nil
	}
	local, domain, ok := strings.Cut(email, "@")
	valid := ok && local != "" && domain != "" && !strings.Contains(domain, "@") && utf8.RuneCountInString(email) <= 254 && utf8.ValidString(email)
	for _, r := range email {
		valid = valid && !unicode.IsSpace(r) && !unicode.IsControl(r)
	}
	if !valid {
		return httpapi.BodyInvalid("email", "an e-mail address of at most 254 characters (local-part@domain) without spaces")
	}
	return nil
}

func (s *routes) registerPlatformAdministrators() {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-platform-administrators", Method: http.MethodGet, Path: "/api/identity/platform-administrators",
		Tags: []string{tagPlatformAdministrators}, Summary: "List the Platform administrator grants",
		Description: "Every grant, oldest first, including those of disabled Principals (active false).",
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, _ *struct{}) (*httpapi.ListOutput[PlatformAdministrator], error) {
		if _, err := s.principalCaller(ctx); err != nil {
			return nil, err
		}
		grants, err := s.Identity().PlatformAdministrators(ctx)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := make([]PlatformAdministrator, 0, len(grants))
		for _, g := range grants {
			out = append(out, platformAdministratorFrom(g))
		}
		return httpapi.ItemsOutput(out), nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "grant-platform-administrator", Method: http.MethodPut, Path: "/api/identity/platform-administrators/{principalId}",
		Tags: []string{tagPlatformAdministrators}, Summary: "Grant the Platform administrator grant to a Principal",
		Description: "The Principal must exist (404) and be active (409 for a disabled one). Idempotent: granting a held grant " +
			"changes nothing. Audited as platform-administrator.granted. Grants and revocations are serialized.",
		Errors: []int{http.StatusNotFound, http.StatusConflict},
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *principalPathInput) (*struct{ Body PlatformAdministrator }, error) {
		caller, err := s.principalCaller(ctx)
		if err != nil {
			return nil, err
		}
		grant, _, err := s.Identity().GrantPlatformAdministrator(ctx, caller.ID, in.PrincipalID)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		return &struct{ Body PlatformAdministrator }{Body: platformAdministratorFrom(grant)}, nil
	})

	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "revoke-platform-administrator", Method: http.MethodDelete, Path: "/api/identity/platform-administrators/{principalId}",
		Tags: []string{tagPlatformAdministrators}, Summary: "Revoke the Platform administrator grant of a Principal",
		Description: "Rejected: revoking one's own grant (422) and revoking the last active Platform administrator (409); 404 " +
			"when the Principal holds no grant. Takes effect on the Principal's next request. Audited as " +
			"platform-administrator.revoked. The supported handover: grant the successor, the successor signs in, then " +
			"disables and optionally revokes the predecessor.",
		DefaultStatus: http.StatusNoContent,
		Errors:        []int{http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity},
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *principalPathInput) (*struct{}, error) {
		caller, err := s.principalCaller(ctx)
		if err != nil {
			return nil, err
		}
		return nil, httpapi.Problem(s.Identity().RevokePlatformAdministrator(ctx, caller.ID, in.PrincipalID))
	})
}

func (s *routes) registerSecurityAudit() {
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-audit-events", Method: http.MethodGet, Path: "/api/identity/audit-events", Tags: []string{tagSecurityAudit},
		Summary:     "Read the latest security audit events",
		Description: "Newest first. limit is 50 unless given and at most 200 (422 above).",
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *auditEventsInput) (*httpapi.ListOutput[AuditEvent], error) {
		if _, err := s.principalCaller(ctx); err != nil {
			return nil, err
		}
		events, err := s.Identity().LatestAuditEvents(ctx, in.Limit)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := make([]AuditEvent, 0, len(events))
		for _, e := range events {
			out = append(out, AuditEvent{
				ID: e.ID, OccurredAt: e.OccurredAt, Action: e.Action, Outcome: e.Outcome, ActorID: e.ActorID, TargetID: e.TargetID,
				TenantID: e.TenantID, WorkspaceID: e.WorkspaceID, ReasonCode: e.ReasonCode, CorrelationID: e.CorrelationID,
			})
		}
		return httpapi.ItemsOutput(out), nil
	})
}
