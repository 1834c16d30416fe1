package packprojects

import (
	"time"

	domain "platform.dev/platform/apiserver/packprojects"
)

// ResourcesResponse is the Composer's inventory.
type ResourcesResponse struct {
	Items []domain.InventoryItem `json:"items"`
	// Truncated is true when a kind had more objects than the inventory lists.
	Truncated bool `json:"truncated"`
}

// PreviewRequest is a selection to preview.
type PreviewRequest struct {
	Selection []string `json:"selection" maxItems:"128" doc:"Keys <Kind>/<name> of default-namespace resources, as the inventory lists them"`
}

// CreateRequest is a Pack project to create: the Pack's coordinate, its presentation and the
// selection.
type CreateRequest struct {
	Publisher   string   `json:"publisher" minLength:"1" maxLength:"63" pattern:"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" doc:"Publisher: lowercase ASCII letters, digits and -"`
	Name        string   `json:"name" minLength:"1" maxLength:"63" pattern:"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" doc:"Pack name: lowercase ASCII letters, digits and -"`
	Version     string   `json:"version" maxLength:"128" pattern:"^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)(-((0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(\\.(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?(\\+([0-9a-zA-Z-]+(\\.[0-9a-zA-Z-]+)*))?$" doc:"Semantic version of the bundle"`
	DisplayName string   `json:"displayName,omitempty" maxLength:"256"`
	Description string   `json:"description,omitempty" maxLength:"4096"`
	Audience    string   `json:"audience,omitempty" enum:"personal,professional,universal" doc:"universal when omitted"`
	Purpose     string   `json:"purpose,omitempty" enum:"sample,template,standard" doc:"standard when omitted"`
	Categories  []string `json:"categories,omitempty" maxItems:"16"`
	Tags        []string `json:"tags,omitempty" maxItems:"32"`
	Selection   []string `json:"selection" minItems:"1" maxItems:"128" doc:"Keys <Kind>/<name> of the resources selected directly"`
}

// ProjectView is a stored Pack project.
type ProjectView struct {
	ID         string    `json:"id"`
	Publisher  string    `json:"publisher"`
	Name       string    `json:"name"`
	Version    string    `json:"version"`
	Digest     string    `json:"digest" doc:"sha256 of the archive"`
	FileName   string    `json:"fileName"`
	Size       int64     `json:"size" doc:"Size of the archive in bytes"`
	Direct     []string  `json:"direct" doc:"Keys of the resources selected directly"`
	Automatic  []string  `json:"automatic" doc:"Keys of the resources the closure brought in"`
	CreatedAt  time.Time `json:"createdAt"`
	Creator    string    `json:"creator" doc:"Id of the Principal that created it"`
	ArchiveURL string    `json:"archiveUrl"`
}

func viewOf(p domain.Project) ProjectView {
	return ProjectView{ID: p.ID, Publisher: p.Publisher, Name: p.Name, Version: p.Version, Digest: string(p.Digest), FileName: p.FileName,
		Size: p.Size, Direct: nonNil(p.Direct), Automatic: nonNil(p.Automatic), CreatedAt: p.CreatedAt, Creator: p.Creator,
		ArchiveURL: "/api/pack-projects/" + p.ID + "/archive"}
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
