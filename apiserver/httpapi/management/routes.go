package management

import (
	"github.com/danielgtaylor/huma/v2"

	"platform.dev/platform/apiserver/httpapi"
)

// Functional tags of the management area in the OpenAPI document.
const (
	tagAgents         = "Agents"
	tagFlows          = "Flows"
	tagModelProviders = "Model providers"
	tagModels         = "Models"
	tagModelProfiles  = "Model profiles"
	tagDeployments    = "Deployments"
)

// routes are the management area's handlers over the shared core.
type routes struct{ *httpapi.Server }

// Routes registers the Management resources: agents, flows and their versions, model providers,
// models, model profiles, deployments (the runtime view of agents), Entries and Dashboards.
func Routes(s *httpapi.Server) {
	r := &routes{s}
	s.AddTags(
		&huma.Tag{Name: tagAgents, Description: "Agents: participants that Flows invoke, with their model profile and tools."},
		&huma.Tag{Name: tagFlows, Description: "Flows: how work is routed to agents; editable drafts and immutable published versions."},
		&huma.Tag{Name: tagModelProviders, Description: "Model providers: where models are served; reads never contact the provider."},
		&huma.Tag{Name: tagModels, Description: "Models: the inventory of models discovered at the model providers."},
		&huma.Tag{Name: tagEntries, Description: "Entries: end-user entry points, authored as drafts bound to an Agent or a Flow and published as immutable projections pinned to an exact Flow version; discovery across the caller's workspaces."},
		&huma.Tag{Name: tagDashboards, Description: "Dashboards: published Entries of a workspace composed with a role and an order; every workspace starts with home."},
		&huma.Tag{Name: tagDeployments, Description: "Deployments: the runtime view of agents, rebuilt from Management state."},
		&huma.Tag{Name: tagModelProfiles, Description: "Model profiles: portable generation, reasoning and output intent over one model provider."},
	)
	r.registerAgents()
	r.registerFlows()
	r.registerModelProviders()
	r.registerModels()
	r.registerModelProfiles()
	r.registerDeployments()
	r.registerEntries()
	r.registerDashboards()
}
