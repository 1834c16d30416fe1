// Package secrets is the Secrets and Vaults area of the service API: the metadata of Secrets and
// Vaults of a workspace, of a tenant and of the instance, their write-only values, and the Local
// Vault's initialization. No route, field, log line or error returns a value.
package secrets

import (
	"context"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"platform.dev/platform/apis/platform/ownerscope"
	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/secrets"
)

// Functional tags of the area in the OpenAPI document.
const (
	tagSecrets    = "Secrets"
	tagVaults     = "Vaults"
	tagLocalVault = "Local Vault"
)

// routes are the area's handlers over the shared core.
type routes struct{ *httpapi.Server }

// Routes registers the Secrets and Vaults of the request's workspace (policies
// platform:resources:*), of the instance and of tenants (Platform administrators), and the Local
// Vault.
func Routes(s *httpapi.Server) {
	r := &routes{s}
	s.AddTags(
		&huma.Tag{Name: tagSecrets, Description: "Secrets: which Vault entry holds a credential and who may use it. Values are write-only: no route returns one."},
		&huma.Tag{Name: tagVaults, Description: "Vaults: where Secret values are stored, and which descendant scopes may store theirs there."},
		&huma.Tag{Name: tagLocalVault, Description: "The Local Vault: AES-256-GCM under a master key that never enters the store."},
	)
	workspace := scopeSpec{prefix: "/api", id: "", where: "of the workspace", read: httpapi.PolicyResourcesRead, write: httpapi.PolicyResourcesWrite}
	register[workspaceList, workspaceName, workspacePut[Vault], workspacePut[Secret], workspaceValue](r, workspace)
	instance := scopeSpec{prefix: "/api/instance", id: "instance-", where: "of the instance", read: httpapi.PolicyPlatformAdmin, write: httpapi.PolicyPlatformAdmin}
	register[instanceList, instanceName, instancePut[Vault], instancePut[Secret], instanceValue](r, instance)
	tenant := scopeSpec{prefix: "/api/tenants/{tenantId}", id: "tenant-", where: "of a tenant", read: httpapi.PolicyPlatformAdmin, write: httpapi.PolicyPlatformAdmin}
	register[tenantList, tenantName, tenantPut[Vault], tenantPut[Secret], tenantValue](r, tenant)
	r.registerLocalVault()
}

// service is the Secrets service, or 503 when the server runs without one.
func (r *routes) service() (*domain.Service, error) {
	if svc := r.Secrets(); svc != nil {
		return svc, nil
	}
	return nil, huma.Error503ServiceUnavailable("this server runs without a Vault")
}

// localVault is the Local Vault, or 503 when the server runs without one.
func (r *routes) localVault() (*domain.LocalVault, error) {
	if svc := r.Secrets(); svc != nil && svc.Vault != nil {
		return svc.Vault, nil
	}
	return nil, huma.Error503ServiceUnavailable("this server runs without a Vault")
}

// scopeSpec is one owner scope's routes: where they are and which policy guards them.
type scopeSpec struct {
	prefix, id, where string
	read, write       string
}

// place is the owner scope a request addresses. A tenant's must exist (404 otherwise); the
// instance's and a tenant's namespace is created on the first write (ensure).
func (r *routes) place(ctx context.Context, p scopeParams, ensure bool) (domain.Place, error) {
	svc, err := r.service()
	if err != nil {
		return domain.Place{}, err
	}
	var place domain.Place
	switch {
	case p.workspace:
		ns, err := r.Workspace(ctx)
		if err != nil {
			return place, err
		}
		place, err = svc.Resolver.Tree.OfNamespace(ctx, ns)
		return place, httpapi.Problem(err)
	case p.tenantID != "":
		place, err = svc.Resolver.Tree.Of(ctx, ownerscope.Of(ownerscope.Tenant, p.tenantID).Ref())
		if errors.Is(err, domain.ErrScopeNotFound) {
			return place, huma.Error404NotFound("tenant " + httpapi.Quote(p.tenantID) + " not found")
		}
		if err != nil {
			return place, httpapi.Problem(err)
		}
	default:
		if place, err = svc.Resolver.Tree.Of(ctx, platformv1.InstanceScope); err != nil {
			return place, httpapi.Problem(err)
		}
	}
	if ensure {
		if err := domain.EnsureScopeNamespace(ctx, r.Kube(), place); err != nil {
			return place, httpapi.Problem(err)
		}
	}
	return place, nil
}

// register registers the routes of one scope; the type parameters are its input types.
func register[L any, N any, PV any, PS any, V any,
	PL interface {
		*L
		scoped
	},
	PN interface {
		*N
		scoped
		named
	},
	PPV interface {
		*PV
		scoped
		named
		ifMatched
		bodied[Vault]
	},
	PPS interface {
		*PS
		scoped
		named
		ifMatched
		bodied[Secret]
	},
	PVal interface {
		*V
		scoped
		named
		bodied[SecretValue]
	}](r *routes, sc scopeSpec) {
	vaults, secrets := sc.prefix+"/vaults", sc.prefix+"/secrets"

	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-" + sc.id + "vaults", Method: http.MethodGet, Path: vaults, Tags: []string{tagVaults},
		Summary: "List the Vaults " + sc.where,
	}, sc.read), func(ctx context.Context, in *L) (*httpapi.ListOutput[Vault], error) {
		return list(ctx, r, PL(in).scope(), &platformv1.VaultList{}, vaultFrom)
	})
	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-" + sc.id + "vault", Method: http.MethodGet, Path: vaults + "/{name}", Tags: []string{tagVaults},
		Summary: "Read a Vault " + sc.where,
	}, sc.read), func(ctx context.Context, in *N) (*httpapi.ObjectOutput[Vault], error) {
		vault := &platformv1.Vault{}
		if err := get(ctx, r, PN(in).scope(), PN(in).name(), vault); err != nil {
			return nil, err
		}
		return &httpapi.ObjectOutput[Vault]{ETag: httpapi.ETag(vault.ResourceVersion), Body: vaultFrom(vault)}, nil
	})
	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "put-" + sc.id + "vault", Method: http.MethodPut, Path: vaults + "/{name}", Tags: []string{tagVaults},
		Summary: "Create or replace a Vault " + sc.where,
		Description: "Creates the Vault when it does not exist (201). Replacing an existing one needs its current ETag in If-Match " +
			"(428 without, 412 when stale); a full PUT carries every property, definition.usePolicy.grants included. The name cannot change.",
	}, sc.write), func(ctx context.Context, in *PV) (*putOutput[Vault], error) {
		p := PPV(in)
		body := p.body()
		if err := body.Validate(p.name()); err != nil {
			return nil, err
		}
		return put(ctx, r, p.scope(), p.name(), p.ifMatch(), &platformv1.Vault{}, func(v *platformv1.Vault) {
			v.Labels, v.Annotations, v.Definition = body.Metadata.Tags, body.Metadata.Annotations, body.Definition
		}, vaultFrom)
	})

	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-" + sc.id + "secrets", Method: http.MethodGet, Path: secrets, Tags: []string{tagSecrets},
		Summary: "List the Secrets " + sc.where + " (metadata and state, never values)",
	}, sc.read), func(ctx context.Context, in *L) (*httpapi.ListOutput[Secret], error) {
		return list(ctx, r, PL(in).scope(), &platformv1.SecretList{}, secretFrom)
	})
	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-" + sc.id + "secret", Method: http.MethodGet, Path: secrets + "/{name}", Tags: []string{tagSecrets},
		Summary: "Read a Secret " + sc.where + " (metadata and state, never the value)",
	}, sc.read), func(ctx context.Context, in *N) (*httpapi.ObjectOutput[Secret], error) {
		secret := &platformv1.Secret{}
		if err := get(ctx, r, PN(in).scope(), PN(in).name(), secret); err != nil {
			return nil, err
		}
		return &httpapi.ObjectOutput[Secret]{ETag: httpapi.ETag(secret.ResourceVersion), Body: secretFrom(secret)}, nil
	})
	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "put-" + sc.id + "secret", Method: http.MethodPut, Path: secrets + "/{name}", Tags: []string{tagSecrets},
		Summary: "Create or replace a Secret " + sc.where,
		Description: "Creates the Secret when it does not exist (201). Replacing an existing one needs its current ETag in If-Match " +
			"(428 without, 412 when stale); a full PUT carries every property (vault, vaultKey, type, usePolicy.grants). " +
			"The name cannot change. The value is not part of the Secret: PUT .../value writes it.",
	}, sc.write), func(ctx context.Context, in *PS) (*putOutput[Secret], error) {
		p := PPS(in)
		body := p.body()
		if err := body.Validate(p.name()); err != nil {
			return nil, err
		}
		return put(ctx, r, p.scope(), p.name(), p.ifMatch(), &platformv1.Secret{}, func(s *platformv1.Secret) {
			s.Labels, s.Annotations, s.Definition = body.Metadata.Tags, body.Metadata.Annotations, body.Definition
		}, secretFrom)
	})

	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "put-" + sc.id + "secret-value", Method: http.MethodPut, Path: secrets + "/{name}/value", Tags: []string{tagSecrets},
		Summary: "Write a Secret's value " + sc.where + " (write-only: set or replace)",
		Description: "Seals the value into the Secret's Vault entry, replacing what it held; nothing reads it back. " +
			"422 for an empty value or one over 65536 bytes; 409 when the Secret's Vault does not resolve or is unavailable " +
			"(no master key, a malformed or replaced one). Nothing is stored on any error.",
		DefaultStatus: http.StatusNoContent, MaxBodyBytes: 512 << 10,
	}, sc.write), func(ctx context.Context, in *V) (*struct{}, error) {
		p := PVal(in)
		svc, err := r.service()
		if err != nil {
			return nil, err
		}
		value := []byte(p.body().Value)
		if err := domain.CheckValue(value); err != nil {
			return nil, httpapi.Problem(err)
		}
		secret := &platformv1.Secret{}
		if err := get(ctx, r, p.scope(), p.name(), secret); err != nil {
			return nil, err
		}
		return nil, httpapi.Problem(svc.SetValue(ctx, secret, value))
	})
	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "delete-" + sc.id + "secret-value", Method: http.MethodDelete, Path: secrets + "/{name}/value", Tags: []string{tagSecrets},
		Summary:       "Remove a Secret's value from its Vault " + sc.where,
		Description:   "404 when the Vault holds no value for the Secret. Values stored under a replaced master key can be removed.",
		DefaultStatus: http.StatusNoContent,
	}, sc.write), func(ctx context.Context, in *N) (*struct{}, error) {
		p := PN(in)
		svc, err := r.service()
		if err != nil {
			return nil, err
		}
		secret := &platformv1.Secret{}
		if err := get(ctx, r, p.scope(), p.name(), secret); err != nil {
			return nil, err
		}
		removed, err := svc.DeleteValue(ctx, secret)
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		if !removed {
			return nil, huma.Error404NotFound("the Vault holds no value for Secret " + httpapi.Quote(secret.Name))
		}
		return nil, nil
	})
}

// list lists the objects of list's kind in the scope.
func list[O client.Object, B any](ctx context.Context, r *routes, p scopeParams, list client.ObjectList, toBody func(O) B) (*httpapi.ListOutput[B], error) {
	place, err := r.place(ctx, p, false)
	if err != nil {
		return nil, err
	}
	items, err := httpapi.ListNamespace[O](ctx, r.Server, place.Namespace, list)
	if err != nil {
		return nil, err
	}
	return httpapi.ListOf(items, toBody), nil
}

// get reads the named object of the scope.
func get(ctx context.Context, r *routes, p scopeParams, name string, obj client.Object) error {
	place, err := r.place(ctx, p, false)
	if err != nil {
		return err
	}
	return httpapi.Problem(r.Kube().Get(ctx, client.ObjectKey{Namespace: place.Namespace, Name: name}, obj))
}

// putOutput is a created (201) or replaced (200) object with its ETag.
type putOutput[B any] struct {
	Status int
	ETag   string `header:"ETag" doc:"The resource's current ETag, for If-Match on the next write"`
	Body   B
}

// put creates the named object of the scope, or replaces it under If-Match. The kube update
// carries the resourceVersion, so a change in between is refused there too.
func put[O client.Object, B any](ctx context.Context, r *routes, p scopeParams, name string, ifMatch httpapi.IfMatchInput, obj O, write func(O), toBody func(O) B) (*putOutput[B], error) {
	place, err := r.place(ctx, p, true)
	if err != nil {
		return nil, err
	}
	err = r.Kube().Get(ctx, client.ObjectKey{Namespace: place.Namespace, Name: name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		if ifMatch.IfMatch != "" {
			return nil, huma.Error412PreconditionFailed(httpapi.Quote(name) + " does not exist, so If-Match cannot match; leave it out to create")
		}
		obj.SetNamespace(place.Namespace)
		obj.SetName(name)
		write(obj)
		if err := r.Kube().Create(ctx, obj, client.FieldOwner(httpapi.FieldManager)); err != nil {
			return nil, httpapi.Problem(err)
		}
		return &putOutput[B]{Status: http.StatusCreated, ETag: httpapi.ETag(obj.GetResourceVersion()), Body: toBody(obj)}, nil
	case err != nil:
		return nil, httpapi.Problem(err)
	}
	resourceVersion, err := ifMatch.RequiredResourceVersion()
	if err != nil {
		return nil, err
	}
	if obj.GetResourceVersion() != resourceVersion {
		return nil, httpapi.StaleETag(kindOf(obj), name)
	}
	write(obj)
	if err := r.Kube().Update(ctx, obj, client.FieldOwner(httpapi.FieldManager)); err != nil {
		return nil, httpapi.Problem(err)
	}
	return &putOutput[B]{Status: http.StatusOK, ETag: httpapi.ETag(obj.GetResourceVersion()), Body: toBody(obj)}, nil
}

func kindOf(obj client.Object) string {
	if _, ok := obj.(*platformv1.Vault); ok {
		return "Vault"
	}
	return "Secret"
}

// LocalVaultStatus is the Local Vault's master key state. It names where the key comes from,
// never the key.
type LocalVaultStatus struct {
	Status  string `json:"status" enum:"Available,Unavailable" doc:"Available when the master key loads"`
	Reason  string `json:"reason,omitempty" doc:"Why not: MasterKeyMissing or MasterKeyInvalid"`
	Message string `json:"message,omitempty"`
}

// LocalVaultInitialized answers the initialization: the state and the absolute key file path.
type LocalVaultInitialized struct {
	Status string `json:"status" enum:"Available" doc:"The Local Vault has its master key"`
	Path   string `json:"path" doc:"Absolute path of the key file created; keep a copy of it: values cannot be read without it"`
}

func (r *routes) registerLocalVault() {
	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-local-vault", Method: http.MethodGet, Path: "/api/local-vault", Tags: []string{tagLocalVault},
		Summary: "Read whether the Local Vault's master key loads",
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, _ *struct{}) (*struct{ Body LocalVaultStatus }, error) {
		vault, err := r.localVault()
		if err != nil {
			return nil, err
		}
		a, err := vault.KeyAvailability()
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		out := LocalVaultStatus{Status: string(platformv1.VaultAvailable)}
		if !a.Available {
			out = LocalVaultStatus{Status: string(platformv1.VaultUnavailableState), Reason: a.Reason, Message: a.Message}
		}
		return &struct{ Body LocalVaultStatus }{Body: out}, nil
	})
	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "initialize-local-vault", Method: http.MethodPost, Path: "/api/local-vault/initialize", Tags: []string{tagLocalVault},
		Summary: "Initialize the Local Vault: create its master key file",
		Description: "The server generates 32 random bytes and writes them, in Base64, to a new key file readable by its owner only " +
			"(create-only: an existing file is never touched). 409, changing nothing, when a key file exists or the master-key " +
			"variable is set. The answer holds the status and the file's absolute path, never the key.",
		DefaultStatus: http.StatusCreated,
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, _ *struct{}) (*struct{ Body LocalVaultInitialized }, error) {
		vault, err := r.localVault()
		if err != nil {
			return nil, err
		}
		path, err := vault.Initialize()
		if err != nil {
			return nil, httpapi.Problem(err)
		}
		r.Log().Info("Local Vault initialized", "keyFile", path)
		return &struct{ Body LocalVaultInitialized }{Body: LocalVaultInitialized{Status: string(platformv1.VaultAvailable), Path: path}}, nil
	})
}
