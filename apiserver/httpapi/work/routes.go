package work

import (
	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
)

// Functional tags of the work area in the OpenAPI document.
const (
	tagWork    = "Work"
	tagRuntime = "Runtime"
	tagRouting = "Routing"
)

// routes are the work area's handlers over the shared core.
type routes struct {
	*httpapi.Server
	streams *streamSlots
}

// Routes registers WorkItems, FlowRuns and their pending actions and streams, Runtime Runs and
// routing.
func Routes(s *httpapi.Server) {
	r := &routes{Server: s, streams: newStreamSlots(s.Config(), s.Log())}
	s.AddTags(
		&huma.Tag{Name: tagRouting, Description: "Routing: one request to the one ready agent of the workspace, executed as a Runtime Run."},
		&huma.Tag{Name: tagRuntime, Description: "Runtime: durable, asynchronous runs of one agent."},
		&huma.Tag{Name: tagWork, Description: "Work: WorkItems, the FlowRuns that execute them, and the pending actions a run waits on."},
	)
	r.registerWork()
	r.registerRunList()
	r.registerRunStream()
	r.registerRuntime()
	r.registerRouting()
}
