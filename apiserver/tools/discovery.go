package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Refresh reports what one discovery changed in a provider's Tools.
type Refresh struct {
	Created    int `json:"created" doc:"Tools the provider listed for the first time (disabled)"`
	Updated    int `json:"updated" doc:"Tools listed again whose title, description or input schema changed"`
	Unchanged  int `json:"unchanged" doc:"Tools listed again, unchanged"`
	Missing    int `json:"missing" doc:"Tools the provider no longer lists (kept, with availability Missing; calls fail)"`
	Reappeared int `json:"reappeared" doc:"Tools that were Missing and are listed again (their enabled setting is kept)"`
	Total      int `json:"total" doc:"Tools of the provider after the refresh: created + updated + unchanged + reappeared + missing"`
	// Skipped lists what the provider listed and the refresh left out, with the reason.
	Skipped []string `json:"skipped,omitempty" doc:"Tools left out: an invalid or repeated name, a schema over 64 KiB, or a name taken by another provider's Tool"`
}

// maxSkipped bounds the reasons a refresh reports.
const maxSkipped = 20

// Refresh lists p's tools and reconciles its Tool objects: a new tool becomes a disabled Tool
// owned by p; a listed one is Available with the provider's title, description and schema; one
// no longer listed is Missing. No refresh enables anything, and an enabled setting is never
// changed. p's status gets the server's name, version and protocol version, the discovery time
// and the tool counts. Status is written with merge patches, so the Tool controller's concurrent
// writes of conditions are neither lost nor a conflict.
func (m *Manager) Refresh(ctx context.Context, p *platformv1.ToolProvider) (Refresh, error) {
	info, discovered, skipped, err := m.Discover(ctx, p)
	if err != nil {
		return Refresh{}, err
	}
	kube := m.opts.Kube
	var out Refresh
	list := &platformv1.ToolList{}
	if err := kube.List(ctx, list, client.InNamespace(p.Namespace)); err != nil {
		return out, err
	}
	byName := map[string]*platformv1.Tool{}
	taken := map[string]*platformv1.Tool{}
	for i := range list.Items {
		t := &list.Items[i]
		taken[t.Name] = t
		if string(t.Definition.Provider.Name) == p.Name {
			byName[t.Definition.ToolName] = t
		}
	}
	now := metav1.Now()
	seen := map[string]bool{}
	for _, d := range discovered {
		t, exists := byName[d.Name]
		if !exists {
			name := ObjectName(p.Name, d.Name)
			if other, ok := taken[name]; ok {
				skipped = append(skipped, fmt.Sprintf("tool %q: the name %s is taken by a Tool of provider %q (tool %q)",
					d.Name, name, other.Definition.Provider.Name, other.Definition.ToolName))
				continue
			}
			t = &platformv1.Tool{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: name,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: platformv1.GroupVersion.String(), Kind: "ToolProvider",
						Name: p.Name, UID: p.UID}}},
				Definition: platformv1.ToolDefinition{Provider: platformv1.LocalObjectReference{Name: platformv1.ResourceName(p.Name)},
					ToolName: d.Name, Enabled: false},
			}
			if err := kube.Create(ctx, t); err != nil {
				return out, err
			}
			taken[name] = t
			out.Created++
		} else {
			switch {
			case t.Status.Availability == platformv1.ToolMissing:
				out.Reappeared++
			case t.Status.Title != d.Title || t.Status.Description != d.Description || !sameSchema(t.Status.InputSchema, d.InputSchema):
				out.Updated++
			default:
				out.Unchanged++
			}
		}
		seen[d.Name] = true
		before := t.DeepCopy()
		t.Status.Availability, t.Status.LastSeenTime = platformv1.ToolAvailable, &now
		t.Status.Title, t.Status.Description = d.Title, d.Description
		t.Status.InputSchema = &runtime.RawExtension{Raw: d.InputSchema}
		if err := kube.Status().Patch(ctx, t, client.MergeFrom(before)); err != nil {
			return out, err
		}
	}
	enabled := 0
	for name, t := range byName {
		if t.Definition.Enabled {
			enabled++
		}
		if seen[name] {
			continue
		}
		out.Missing++
		if t.Status.Availability != platformv1.ToolMissing {
			before := t.DeepCopy()
			t.Status.Availability = platformv1.ToolMissing
			if err := kube.Status().Patch(ctx, t, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
				return out, err
			}
		}
	}
	out.Total = out.Created + out.Updated + out.Unchanged + out.Reappeared + out.Missing
	if len(skipped) > maxSkipped {
		skipped = append(skipped[:maxSkipped], fmt.Sprintf("and %d more", len(skipped)-maxSkipped))
	}
	out.Skipped = skipped

	current := &platformv1.ToolProvider{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(p), current); err != nil {
		return out, err
	}
	before := current.DeepCopy()
	setServerInfo(&current.Status, info)
	setConnection(&current.Status, platformv1.ToolProviderConnected, "", now)
	current.Status.LastDiscoveryTime = &now
	current.Status.Tools, current.Status.MissingTools = int32(len(seen)), int32(out.Missing)
	current.Status.EnabledTools = int32(enabled)
	return out, kube.Status().Patch(ctx, current, client.MergeFrom(before))
}

// sameSchema compares a stored schema with a discovered one, as JSON values.
func sameSchema(stored *runtime.RawExtension, discovered []byte) bool {
	if stored == nil {
		return false
	}
	a, b := compact(stored.Raw), compact(discovered)
	return a != nil && bytes.Equal(a, b)
}

func compact(raw []byte) []byte {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return out
}

// DiscoveredTool is one tool a provider lists.
type DiscoveredTool struct {
	Name        string
	Title       string
	Description string
	// InputSchema is the JSON Schema of the arguments; {"type":"object"} when the provider gave
	// none.
	InputSchema json.RawMessage
}

// Discover lists p's tools. Tools with an invalid or repeated name, or a schema over 64 KiB,
// are skipped, each with a reason; descriptions are cut at 8 KiB.
func (m *Manager) Discover(ctx context.Context, p *platformv1.ToolProvider) (ServerInfo, []DiscoveredTool, []string, error) {
	s, err := m.connect(ctx, p)
	if err != nil {
		return ServerInfo{}, nil, nil, err
	}
	listCtx, cancel := context.WithTimeout(ctx, timeout(p))
	defer cancel()
	var (
		out     []DiscoveredTool
		skipped []string
		seen    = map[string]bool{}
	)
	for tool, err := range s.peer.tools(listCtx) {
		if err != nil {
			return ServerInfo{}, nil, nil, m.failed(p, s, listCtx, err, "listing tools")
		}
		if len(out)+len(skipped) >= maxTools {
			skipped = append(skipped, fmt.Sprintf("tools after the first %d", maxTools))
			break
		}
		switch {
		case !validToolName.MatchString(tool.Name):
			skipped = append(skipped, fmt.Sprintf("a tool whose name is not 1 to 128 letters, digits, '_', '-' or '.' (%q)", truncate(tool.Name, 64)))
			continue
		case seen[tool.Name]:
			skipped = append(skipped, fmt.Sprintf("tool %q, listed more than once", tool.Name))
			continue
		}
		seen[tool.Name] = true
		schema := json.RawMessage(`{"type":"object"}`)
		if tool.InputSchema != nil {
			b, err := json.Marshal(tool.InputSchema)
			if err != nil || len(b) > 64<<10 || !isObject(b) {
				skipped = append(skipped, fmt.Sprintf("tool %q, whose input schema is not a JSON object of at most 64 KiB", tool.Name))
				continue
			}
			schema = b
		}
		out = append(out, DiscoveredTool{Name: tool.Name, Title: truncate(tool.Title, 256), Description: truncate(tool.Description, 8192), InputSchema: schema})
	}
	return s.info, out, skipped, nil
}

func isObject(b []byte) bool {
	var v map[string]any
	return json.Unmarshal(b, &v) == nil && v != nil
}
