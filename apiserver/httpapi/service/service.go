// Package service assembles the service API: the shared core (apiserver/httpapi) with the routes
// of every functional area, each from its own package.
package service

import (
	"platform.dev/platform/apiserver/httpapi"
	"platform.dev/platform/apiserver/httpapi/console"
	"platform.dev/platform/apiserver/httpapi/hub"
	"platform.dev/platform/apiserver/httpapi/identity"
	"platform.dev/platform/apiserver/httpapi/management"
	"platform.dev/platform/apiserver/httpapi/packprojects"
	"platform.dev/platform/apiserver/httpapi/packs"
	"platform.dev/platform/apiserver/httpapi/secrets"
	"platform.dev/platform/apiserver/httpapi/tools"
	"platform.dev/platform/apiserver/httpapi/triggers"
	"platform.dev/platform/apiserver/httpapi/work"
	"platform.dev/platform/apiserver/httpapi/workplace"
)

// Areas are the functional areas of the service API, in the order their routes and tags appear
// in the OpenAPI document.
var Areas = []httpapi.Area{identity.Routes, management.Routes, work.Routes, workplace.Routes, secrets.Routes, tools.Routes, triggers.Routes, packprojects.Routes, packs.Routes, hub.Routes, console.Routes}

// New builds the service API with every area.
func New(opts httpapi.Options) (*httpapi.Server, error) {
	return httpapi.New(opts, Areas...)
}
