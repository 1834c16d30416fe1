// Package diagnostics is the Diagnostics area of the service API: the exchanges that HTTP payload
// capture kept (Development only), for Platform administrators.
package diagnostics

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
)

const tagDiagnostics = "Diagnostics"

// ListInput filters the captured exchanges.
type ListInput struct {
	Contains string `query:"contains" maxLength:"256" doc:"Only exchanges whose path, query or bodies contain this text (a run id, say)"`
	Take     int    `query:"take" minimum:"1" maximum:"200" default:"50" doc:"At most this many, newest first"`
}

// Routes registers the captured exchanges when payload capture is on; otherwise the route does
// not exist (404), as in every environment but Development.
func Routes(s *httpapi.Server) {
	capture := s.PayloadCapture()
	if capture == nil {
		return
	}
	s.AddTags(&huma.Tag{Name: tagDiagnostics, Description: "Diagnostics: HTTP payload capture (Development only), bounded and redacted."})
	huma.Register(s.API(), httpapi.Secured(huma.Operation{
		OperationID: "list-captured-requests", Method: http.MethodGet, Path: "/api/diagnostics/requests", Tags: []string{tagDiagnostics},
		Summary: "List the service API's recent exchanges kept by HTTP payload capture",
		Description: "Development only, for Platform administrators: the newest exchanges first, each body cut at " +
			"MaximumBodyLength, responses only when CaptureResponses is on. Passwords, tokens, resume tokens, credentials " +
			"and Secret values are redacted by field and by header before anything is kept.",
	}, httpapi.PolicyPlatformAdmin), func(_ context.Context, in *ListInput) (*struct {
		Body httpapi.Items[httpapi.Captured]
	}, error) {
		return &struct {
			Body httpapi.Items[httpapi.Captured]
		}{Body: httpapi.ItemsOf(capture.List(in.Contains, in.Take))}, nil
	})
}
