package identity

import (
	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
)

// Functional tags of the identity area in the OpenAPI document.
const (
	tagAuthentication         = "Authentication"
	tagIdentity               = "Identity"
	tagAccounts               = "Local accounts"
	tagPlatformAdministrators = "Platform administrators"
	tagSecurityAudit          = "Security audit"
	tagRequestContext         = "Request context"
	tagPreferences            = "Preferences"
	tagOrganization           = "Organization"
)

// routes are the identity area's handlers over the shared core.
type routes struct{ *httpapi.Server }

// Routes registers sign-in and sign-out, identity administration, the request context,
// preferences, the organization, personal access tokens and the account web pages.
func Routes(s *httpapi.Server) {
	r := &routes{s}
	s.AddTags(
		&huma.Tag{Name: tagAuthentication, Description: "Bootstrap of the first administrator, local and OIDC sign-in, and sign-out."},
		&huma.Tag{Name: tagIdentity, Description: "Identity administration: the external identities linked to Principals."},
		&huma.Tag{Name: tagAccounts, Description: "Local accounts: creation with initial access, enabling and disabling, for Platform administrators."},
		&huma.Tag{Name: tagPlatformAdministrators, Description: "Platform administrator grants: the instance-level grant, distinct from any workspace role."},
		&huma.Tag{Name: tagSecurityAudit, Description: "The append-only security audit log."},
		&huma.Tag{Name: tagRequestContext, Description: "The caller's Principal, Tenant, Workspace and permissions, and the selected workspace."},
		&huma.Tag{Name: tagPreferences, Description: "The caller's global preferences."},
		&huma.Tag{Name: tagOrganization, Description: "The Tenant, its workspaces, their memberships and roles, and the organization's members."},
	)
	r.registerAuth()
	r.registerOIDC()
	r.registerExternalIdentities()
	r.registerPATs()
	r.registerAccounts()
	r.registerPlatformAdministrators()
	r.registerSecurityAudit()
	r.registerRequestContext()
	r.registerPreferences()
	r.registerOrganization()
	r.registerPages(s.Mux())
}
