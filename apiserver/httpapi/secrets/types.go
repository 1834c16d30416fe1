package secrets

import (
	"time"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
)

// Vault is a Vault in the spec's envelope.
type Vault struct {
	APIVersion string                     `json:"apiVersion" enum:"platform/v1,platform.dev/v1" doc:"platform/v1 (platform.dev/v1 is accepted too)"`
	Kind       string                     `json:"kind" enum:"Vault"`
	Metadata   httpapi.ResourceMetadata   `json:"metadata"`
	Definition platformv1.VaultDefinition `json:"definition"`
	Status     *VaultState                `json:"status,omitempty" readOnly:"true"`
}

// VaultState is the observed state of a Vault.
type VaultState struct {
	httpapi.ResourceState
	Availability string `json:"availability,omitempty" enum:"Available,Unavailable" doc:"Available once the Vault can store and read values"`
}

// Validate checks the envelope: the apiVersion spelling and the name of the path.
func (in Vault) Validate(pathName string) error {
	return httpapi.EnvelopeErrors(in.APIVersion, in.Metadata, pathName)
}

func vaultFrom(v *platformv1.Vault) Vault {
	return Vault{APIVersion: httpapi.SpecAPIVersion, Kind: "Vault", Metadata: httpapi.MetadataFrom(v.ObjectMeta), Definition: v.Definition,
		Status: &VaultState{ResourceState: httpapi.StateFrom(v.Status.ResourceStatus), Availability: string(v.Status.Availability)}}
}

// Secret is a Secret in the spec's envelope: metadata only. There is no value field.
type Secret struct {
	APIVersion string                      `json:"apiVersion" enum:"platform/v1,platform.dev/v1" doc:"platform/v1 (platform.dev/v1 is accepted too)"`
	Kind       string                      `json:"kind" enum:"Secret"`
	Metadata   httpapi.ResourceMetadata    `json:"metadata"`
	Definition platformv1.SecretDefinition `json:"definition"`
	Status     *SecretState                `json:"status,omitempty" readOnly:"true"`
}

// SecretState is the observed state of a Secret: whether its Vault holds a value, never the value.
type SecretState struct {
	httpapi.ResourceState
	State            string     `json:"state,omitempty" enum:"Configured,Missing" doc:"Configured when the Vault holds a value, Missing otherwise"`
	ValueUpdatedTime *time.Time `json:"valueUpdatedTime,omitempty" doc:"When the value was last written"`
}

// Validate checks the envelope: the apiVersion spelling and the name of the path.
func (in Secret) Validate(pathName string) error {
	return httpapi.EnvelopeErrors(in.APIVersion, in.Metadata, pathName)
}

func secretFrom(s *platformv1.Secret) Secret {
	state := &SecretState{ResourceState: httpapi.StateFrom(s.Status.ResourceStatus), State: string(s.Status.State)}
	if t := s.Status.ValueUpdatedTime; t != nil {
		utc := t.UTC()
		state.ValueUpdatedTime = &utc
	}
	return Secret{APIVersion: httpapi.SpecAPIVersion, Kind: "Secret", Metadata: httpapi.MetadataFrom(s.ObjectMeta), Definition: s.Definition, Status: state}
}

// SecretValue is the body of a value write. It is never answered, logged or stored in clear.
type SecretValue struct {
	Value string `json:"value" minLength:"1" writeOnly:"true" doc:"The value, 1 to 65536 bytes (UTF-8); opaque to the platform"`
}

// The inputs of the routes, one set per owner scope. Each embeds what selects its scope and
// exposes it, with the name, If-Match and body, through the small interfaces below, so that one
// generic registration serves the three scopes.

// scopeParams is what a request says of its scope.
type scopeParams struct {
	workspace bool
	tenantID  string
}

type scoped interface{ scope() scopeParams }
type named interface{ name() string }
type ifMatched interface{ ifMatch() httpapi.IfMatchInput }
type bodied[B any] interface{ body() B }

// InWorkspace selects the request's workspace (header, cookie, first membership).
type InWorkspace struct{ httpapi.WorkspaceInput }

func (InWorkspace) scope() scopeParams { return scopeParams{workspace: true} }

// InInstance selects the instance.
type InInstance struct{}

func (InInstance) scope() scopeParams { return scopeParams{} }

// InTenant selects a tenant by id.
type InTenant struct {
	TenantID string `path:"tenantId" maxLength:"128" doc:"Id of the tenant"`
}

func (t InTenant) scope() scopeParams { return scopeParams{tenantID: t.TenantID} }

type NameParam struct {
	Name string `path:"name" maxLength:"253" doc:"Name of the resource (metadata.name); it cannot change"`
}

func (n NameParam) name() string { return n.Name }

type IfMatchParam struct{ httpapi.IfMatchInput }

func (i IfMatchParam) ifMatch() httpapi.IfMatchInput { return i.IfMatchInput }

type (
	workspaceList struct{ InWorkspace }
	instanceList  struct{ InInstance }
	tenantList    struct{ InTenant }
	workspaceName struct {
		InWorkspace
		NameParam
	}
	instanceName struct {
		InInstance
		NameParam
	}
	tenantName struct {
		InTenant
		NameParam
	}
	workspacePut[B any] struct {
		InWorkspace
		IfMatchParam
		NameParam
		Body B
	}
	instancePut[B any] struct {
		InInstance
		IfMatchParam
		NameParam
		Body B
	}
	tenantPut[B any] struct {
		InTenant
		IfMatchParam
		NameParam
		Body B
	}
	workspaceValue struct {
		InWorkspace
		NameParam
		Body SecretValue
	}
	instanceValue struct {
		InInstance
		NameParam
		Body SecretValue
	}
	tenantValue struct {
		InTenant
		NameParam
		Body SecretValue
	}
)

func (p *workspacePut[B]) body() B          { return p.Body }
func (p *instancePut[B]) body() B           { return p.Body }
func (p *tenantPut[B]) body() B             { return p.Body }
func (p *workspaceValue) body() SecretValue { return p.Body }
func (p *instanceValue) body() SecretValue  { return p.Body }
func (p *tenantValue) body() SecretValue    { return p.Body }
