package sourceregistries

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/identity"
	domain "platform.dev/platform/apiserver/sourceregistries"
)

const tagSourceRegistries = "Source registries"

// routes are the area's handlers over the shared core.
type routes struct{ *httpapi.Server }

// Routes registers the Source registry registrations of the instance, for Platform
// administrators only.
func Routes(s *httpapi.Server) {
	r := &routes{s}
	s.AddTags(&huma.Tag{Name: tagSourceRegistries, Description: "Source registries: instance-owned discovery endpoints for Sources, with trust evaluation and exact import. Platform administrators only."})
	r.registerRegistrations()
	r.registerHistoryAndTrust()
	r.registerRefresh()
	r.registerDiscovery()
	r.registerVersionTrust()
	r.registerImports()
}

type nameInput struct {
	Name string `path:"name" maxLength:"63" doc:"Name of the registration"`
}

type createInput struct {
	Body Registration
}

type replaceInput struct {
	httpapi.IfMatchInput
	Name string `path:"name" maxLength:"63" doc:"Name of the registration"`
	Body Registration
}

type deleteInput struct {
	httpapi.IfMatchInput
	Name string `path:"name" maxLength:"63" doc:"Name of the registration"`
}

type registrationOutput struct {
	ETag string `header:"ETag" doc:"The registration's current ETag, for If-Match on the next write"`
	Body Registration
}

func (r *routes) registerRegistrations() {
	const path = "/api/sourceregistries"
	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-source-registries", Method: http.MethodGet, Path: path, Tags: []string{tagSourceRegistries},
		Summary: "List the Source registry registrations of the instance",
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, _ *struct{}) (*httpapi.ListOutput[Registration], error) {
		var list platformv1.SourceRegistryList
		if err := r.Kube().List(ctx, &list); err != nil {
			return nil, httpapi.Problem(err)
		}
		now := time.Now()
		items := make([]Registration, 0, len(list.Items))
		for i := range list.Items {
			items = append(items, registrationFrom(&list.Items[i], now))
		}
		return httpapi.ItemsOutput(items), nil
	})

	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "get-source-registry", Method: http.MethodGet, Path: path + "/{name}", Tags: []string{tagSourceRegistries},
		Summary: "Read a Source registry registration",
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *nameInput) (*registrationOutput, error) {
		reg, err := r.get(ctx, in.Name)
		if err != nil {
			return nil, err
		}
		return output(reg), nil
	})

	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "create-source-registry", Method: http.MethodPost, Path: path, Tags: []string{tagSourceRegistries},
		Summary:       "Register a Source registry",
		Description:   "The index is not fetched here: refresh the registration to cache it. A trust policy other than untrusted is audited.",
		DefaultStatus: http.StatusCreated,
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *createInput) (*registrationOutput, error) {
		if reservedNames[in.Body.Name] {
			return nil, huma.Error422UnprocessableEntity("the name "+httpapi.Quote(in.Body.Name)+" is reserved: /api/sourceregistries/"+in.Body.Name+" is another route", &huma.ErrorDetail{Location: "body.name", Value: in.Body.Name})
		}
		reg := &platformv1.SourceRegistry{Definition: in.Body.Properties}
		reg.Name = in.Body.Name
		if err := r.Kube().Create(ctx, reg, client.FieldOwner(httpapi.FieldManager)); err != nil {
			return nil, writeProblem(reg.Name, err)
		}
		if policy := trustPolicyOf(reg); policy != platformv1.UntrustedPolicy {
			if err := r.auditTrustPolicy(ctx, reg); err != nil {
				return nil, err
			}
		}
		return output(reg), nil
	})

	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "replace-source-registry", Method: http.MethodPut, Path: path + "/{name}", Tags: []string{tagSourceRegistries},
		Summary:     "Replace a Source registry registration's properties",
		Description: "ETag-protected (If-Match). A change of trust policy is audited. The official registration may be disabled or reconfigured.",
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *replaceInput) (*registrationOutput, error) {
		if in.Body.Name != "" && in.Body.Name != in.Name {
			return nil, huma.Error422UnprocessableEntity("the body's name "+httpapi.Quote(in.Body.Name)+" is not the name of the path "+httpapi.Quote(in.Name), &huma.ErrorDetail{Location: "body.name", Value: in.Body.Name})
		}
		reg, err := r.current(ctx, in.IfMatchInput, in.Name)
		if err != nil {
			return nil, err
		}
		before := trustPolicyOf(reg)
		reg.Definition = in.Body.Properties
		// The kube update carries the resourceVersion, so a change in between is refused there too.
		if err := r.Kube().Update(ctx, reg, client.FieldOwner(httpapi.FieldManager)); err != nil {
			return nil, writeProblem(reg.Name, err)
		}
		if trustPolicyOf(reg) != before {
			if err := r.auditTrustPolicy(ctx, reg); err != nil {
				return nil, err
			}
		}
		return output(reg), nil
	})

	huma.Register(r.API(), httpapi.Secured(huma.Operation{
		OperationID: "delete-source-registry", Method: http.MethodDelete, Path: path + "/{name}", Tags: []string{tagSourceRegistries},
		Summary:       "Delete a Source registry registration",
		Description:   "ETag-protected (If-Match). Its cached observations, refresh history and imported Source versions are kept for provenance. The official registration cannot be deleted (409); disable it instead.",
		DefaultStatus: http.StatusNoContent,
	}, httpapi.PolicyPlatformAdmin), func(ctx context.Context, in *deleteInput) (*struct{}, error) {
		if in.Name == domain.OfficialName {
			return nil, huma.Error409Conflict("the official Source registry registration " + httpapi.Quote(in.Name) + " cannot be deleted; disable it instead (properties.enabled: false)")
		}
		reg, err := r.current(ctx, in.IfMatchInput, in.Name)
		if err != nil {
			return nil, err
		}
		uid, resourceVersion := reg.UID, reg.ResourceVersion
		if err := r.Kube().Delete(ctx, reg, client.Preconditions{UID: &uid, ResourceVersion: &resourceVersion}); err != nil {
			return nil, httpapi.Problem(err)
		}
		return nil, nil
	})
}

// reservedNames are the path segments of /api/sourceregistries/... that are other routes.
var reservedNames = map[string]bool{"discovery": true, "trust": true}

// writeProblem is Problem Details of a refused create or replace in the request's own terms: the
// kind's definition is the body's properties, and the registration is named as one (the kube
// messages say "SourceRegistry" and "body.definition").
func writeProblem(name string, err error) error {
	switch {
	case apierrors.IsAlreadyExists(err):
		return huma.Error409Conflict("a Source registry registration named " + httpapi.Quote(name) + " already exists")
	case apierrors.IsConflict(err):
		return httpapi.StaleETag("Source registry registration", name)
	case !apierrors.IsInvalid(err):
		return httpapi.Problem(err)
	}
	problem := httpapi.Problem(err)
	var model *huma.ErrorModel
	if !errors.As(problem, &model) {
		return problem
	}
	model.Detail = "the Source registry registration " + httpapi.Quote(name) + " is invalid"
	for _, detail := range model.Errors {
		if detail == nil {
			continue
		}
		switch {
		case strings.HasPrefix(detail.Location, "body.definition"):
			detail.Location = "body.properties" + strings.TrimPrefix(detail.Location, "body.definition")
		case strings.HasPrefix(detail.Location, "body.metadata.name"):
			detail.Location = "body.name"
		default:
			// A cause of the whole object (kube writes its field as "<nil>").
			detail.Location = "body.properties"
		}
	}
	return problem
}

// get reads the named registration; 404 when there is none.
func (r *routes) get(ctx context.Context, name string) (*platformv1.SourceRegistry, error) {
	reg := &platformv1.SourceRegistry{}
	if err := r.Kube().Get(ctx, client.ObjectKey{Name: name}, reg); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, huma.Error404NotFound("Source registry registration " + httpapi.Quote(name) + " not found")
		}
		return nil, httpapi.Problem(err)
	}
	return reg, nil
}

// current reads the registration a write changes, after checking the caller names the ETag it
// last read (428 without, 412 when stale).
func (r *routes) current(ctx context.Context, in httpapi.IfMatchInput, name string) (*platformv1.SourceRegistry, error) {
	resourceVersion, err := in.RequiredResourceVersion()
	if err != nil {
		return nil, err
	}
	reg, err := r.get(ctx, name)
	if err != nil {
		return nil, err
	}
	if reg.ResourceVersion != resourceVersion {
		return nil, httpapi.StaleETag("Source registry registration", name)
	}
	return reg, nil
}

// auditTrustPolicy records the registration's new trust policy: who, which registration (its
// UID), which policy; never a URL or credential.
func (r *routes) auditTrustPolicy(ctx context.Context, reg *platformv1.SourceRegistry) error {
	ids := r.Identity()
	if ids == nil {
		return nil
	}
	caller, _ := httpapi.CallerFrom(ctx)
	err := ids.RecordAudit(ctx, identity.Event{
		Action: identity.ActionSourceRegistryTrustPolicyChanged, Outcome: identity.OutcomeSuccess,
		ActorID: caller.ID, TargetID: string(reg.UID), ReasonCode: string(trustPolicyOf(reg)),
	})
	return httpapi.Problem(err)
}

func trustPolicyOf(reg *platformv1.SourceRegistry) platformv1.TrustPolicy {
	if reg.Definition.TrustPolicy == "" {
		return platformv1.UntrustedPolicy
	}
	return reg.Definition.TrustPolicy
}

func output(reg *platformv1.SourceRegistry) *registrationOutput {
	body := registrationFrom(reg, time.Now())
	return &registrationOutput{ETag: body.ETag, Body: body}
}

func registrationFrom(reg *platformv1.SourceRegistry, now time.Time) Registration {
	st := reg.Status
	status := &RegistrationStatus{
		ResourceState:        httpapi.StateFrom(st.ResourceStatus),
		Origin:               string(st.Origin),
		Official:             reg.Name == domain.OfficialName,
		ConsecutiveFailures:  st.ConsecutiveFailures,
		CurrentObservationID: st.CurrentObservationID,
	}
	if st.LastRefresh != nil {
		status.LastRefresh = &RefreshSummary{
			Time: st.LastRefresh.Time.UTC(), Trigger: string(st.LastRefresh.Trigger), Outcome: string(st.LastRefresh.Outcome),
			ErrorCode: st.LastRefresh.ErrorCode, Digest: string(st.LastRefresh.Digest),
		}
	}
	if st.LastSuccessTime != nil {
		t := st.LastSuccessTime.UTC()
		status.LastSuccessTime = &t
	}
	status.Freshness = Freshness(reg, now)
	status.Stale = status.Freshness == "stale"
	return Registration{Name: reg.Name, UID: string(reg.UID), Properties: reg.Definition, Status: status, ETag: httpapi.ETag(reg.ResourceVersion)}
}

// Freshness is disabled for a disabled registration, never before a first successful refresh,
// stale once staleAfter has passed since the last successful validation, else fresh.
func Freshness(reg *platformv1.SourceRegistry, now time.Time) string {
	switch {
	case reg.Definition.Enabled != nil && !*reg.Definition.Enabled:
		return "disabled"
	case reg.Status.LastSuccessTime == nil:
		return "never"
	case now.Sub(reg.Status.LastSuccessTime.Time) > StaleAfter(reg):
		return "stale"
	}
	return "fresh"
}

// StaleAfter is the registration's staleAfter, or the service default.
func StaleAfter(reg *platformv1.SourceRegistry) time.Duration {
	return domain.PolicyOf(reg.Definition).StaleAfter
}
