// Package service assembles the service API: the shared core (apiserver/httpapi) with the routes
// of every functional area, each from its own package.
package service

import (
	"encoding/json"

	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/console"
	"platform.dev/platform/apiserver/httpapi/diagnostics"
	"platform.dev/platform/apiserver/httpapi/hub"
	"platform.dev/platform/apiserver/httpapi/identity"
	"platform.dev/platform/apiserver/httpapi/limits"
	"platform.dev/platform/apiserver/httpapi/management"
	"platform.dev/platform/apiserver/httpapi/packprojects"
	"platform.dev/platform/apiserver/httpapi/packs"
	"platform.dev/platform/apiserver/httpapi/secrets"
	"platform.dev/platform/apiserver/httpapi/sourceregistries"
	"platform.dev/platform/apiserver/httpapi/tools"
	"platform.dev/platform/apiserver/httpapi/triggers"
	"platform.dev/platform/apiserver/httpapi/usage"
	"platform.dev/platform/apiserver/httpapi/work"
	"platform.dev/platform/apiserver/httpapi/workplace"
	"platform.dev/platform/internal/config"
)

// Areas are the functional areas of the service API, in the order their routes and tags appear
// in the OpenAPI document.
var Areas = []httpapi.Area{identity.Routes, management.Routes, work.Routes, workplace.Routes, secrets.Routes, tools.Routes, triggers.Routes, packs.Routes, packprojects.Routes, sourceregistries.Routes, hub.Routes, limits.Routes, usage.Routes, diagnostics.Routes, console.Routes}

// New builds the service API with every area.
func New(opts httpapi.Options) (*httpapi.Server, error) {
	return httpapi.New(opts, Areas...)
}

// OpenAPIDocument is the service API's OpenAPI 3.1 document, as Development serves it at
// /openapi/v1.json, built without any backend: `platform openapi` prints it in every environment.
func OpenAPIDocument() ([]byte, error) {
	api, err := httpapi.New(httpapi.Options{
		Config:       config.FromMap(config.Development, map[string]string{"Platform:Authentication:Mode": "Development"}),
		DocumentOnly: true,
	}, Areas...)
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(api.API().OpenAPI(), "", "  ")
}
