package tools

import (
	"context"
	"encoding/json"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// Offered is a Tool as a model or an MCP client sees it.
type Offered struct {
	// FunctionName is the name the model calls (see FunctionName).
	FunctionName string
	// Tool is the Tool object's name, Provider its ToolProvider, ToolName its name there.
	Tool     string
	Provider string
	ToolName string
	Title    string
	// Description is the provider's description of the tool.
	Description string
	// InputSchema is the JSON Schema of the arguments.
	InputSchema json.RawMessage
	// RequiresApproval says a person approves each call in a run; ApprovalExpiry how long the
	// approval waits and what happens when nobody decides in time (nil: the defaults).
	RequiresApproval bool
	ApprovalExpiry   *platformv1.QuestionExpiry
}

func offeredOf(t *platformv1.Tool) Offered {
	schema := json.RawMessage(`{"type":"object"}`)
	if t.Status.InputSchema != nil && len(t.Status.InputSchema.Raw) > 0 {
		schema = t.Status.InputSchema.Raw
	}
	return Offered{FunctionName: FunctionName(t.Name), Tool: t.Name, Provider: string(t.Definition.Provider.Name),
		ToolName: t.Definition.ToolName, Title: t.Status.Title, Description: t.Status.Description, InputSchema: schema,
		RequiresApproval: t.Definition.RequiresApproval, ApprovalExpiry: t.Definition.ApprovalExpiry}
}

// AgentTools are the Tools among names (an agent's tools) that may be called now: they exist,
// are enabled and their provider still lists them. The others are left out, so a model is never
// offered a tool it may not call.
func (m *Manager) AgentTools(ctx context.Context, namespace string, names []string) ([]Offered, error) {
	out := make([]Offered, 0, len(names))
	for _, name := range names {
		t := &platformv1.Tool{}
		err := m.opts.Kube.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, t)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if Unavailability(t) == "" {
			out = append(out, offeredOf(t))
		}
	}
	return out, nil
}

// WorkspaceTools are every Tool of namespace that may be called now, in name order.
func (m *Manager) WorkspaceTools(ctx context.Context, namespace string) ([]Offered, error) {
	list := &platformv1.ToolList{}
	if err := m.opts.Kube.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	var out []Offered
	for i := range list.Items {
		if Unavailability(&list.Items[i]) == "" {
			out = append(out, offeredOf(&list.Items[i]))
		}
	}
	return out, nil
}
