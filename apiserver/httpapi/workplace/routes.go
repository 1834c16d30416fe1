package workplace

import (
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/workplace"
)

// Functional tags of the workplace area in the OpenAPI document.
const (
	tagInteractions  = "Interactions"
	tagTasks         = "Tasks"
	tagNotifications = "Notifications"
)

// routes are the workplace area's handlers over the shared core.
type routes struct {
	*httpapi.Server
	workplace *domain.Store
}

// Routes registers the Workplace routes (503 on a server without the Work and Workplace stores):
// conversations opened from Entries, their messages and pending actions, Tasks with their
// activities, Results and artifacts, and notifications, all under /api/workspaces/{workspace}/.
func Routes(s *httpapi.Server) {
	r := &routes{Server: s, workplace: s.Workplace()}
	s.AddTags(
		&huma.Tag{Name: tagInteractions, Description: "Interactions: the durable conversations Entries open, their messages, follow-ups and the answers to their questions."},
		&huma.Tag{Name: tagTasks, Description: "Tasks: the public, living projection of work, with its activities, Results and artifacts."},
		&huma.Tag{Name: tagNotifications, Description: "Notifications: what needs a person's attention, attention first, read one or all."},
	)
	r.registerInteractions()
	r.registerTasks()
	r.registerNotifications()
	r.registerQuestions()
}

// operation is op with policy, answering 503 on a server without the Work and Workplace stores.
func (s *routes) operation(op huma.Operation, policy string) huma.Operation {
	op = httpapi.Secured(op, policy)
	op.Middlewares = append(op.Middlewares, func(ctx huma.Context, next func(huma.Context)) {
		if s.workplace == nil || s.Work() == nil {
			httpapi.WriteError(s.API(), ctx, huma.Error503ServiceUnavailable("the Workplace is not configured on this server"))
			return
		}
		next(ctx)
	})
	op.Errors = append(op.Errors, http.StatusServiceUnavailable)
	return op
}
