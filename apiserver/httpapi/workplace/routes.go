package workplace

import (
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

// Routes returns the area of the Workplace routes over store: conversations opened from
// Entries, their messages and pending actions, Tasks with their activities, Results and
// artifacts, and notifications, all under /api/workspaces/{workspace}/.
func Routes(store *domain.Store) httpapi.Area {
	return func(s *httpapi.Server) {
		if store == nil {
			return
		}
		r := &routes{Server: s, workplace: store}
		s.AddTags(
			&huma.Tag{Name: tagInteractions, Description: "Interactions: the durable conversations Entries open, their messages, follow-ups and the answers to their questions."},
			&huma.Tag{Name: tagTasks, Description: "Tasks: the public, living projection of work, with its activities, Results and artifacts."},
			&huma.Tag{Name: tagNotifications, Description: "Notifications: what needs a person's attention, attention first, read one or all."},
		)
		r.registerInteractions()
		r.registerTasks()
		r.registerNotifications()
	}
}
