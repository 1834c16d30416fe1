package executor

import (
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/provider"
	flowvalidation "platform.dev/platform/controllers/flow"
)

// maxPinned bounds each map of pinnedCache and graphCache; a full map is emptied and fills again.
const maxPinned = 256

// pinnedCache keeps what the pinned Flows and agents of runs decode to: every run of a Flow
// version pins the same snapshot, and checking and decoding it again at each run was work
// without news. Everything is keyed by the bytes a run pins or holds, so a run is always
// executed as it was pinned. The values are shared and never changed.
type pinnedCache struct {
	mu sync.Mutex
	// versions: a published version's snapshot -> its checked graph.
	versions map[string]*graph
	// agents: pinned agents -> what they decode to.
	agents map[string]map[string]provider.Agent
}

// version is the checked graph and the snapshot to pin of the definition def of a published
// version (published false: a draft, checked at each run); reason says why it cannot execute.
func (c *pinnedCache) version(def platformv1.FlowDefinition, published bool, invalid func(error) string) (*graph, json.RawMessage, string, error) {
	snapshot, err := json.Marshal(def)
	if err != nil {
		return nil, nil, "", err
	}
	c.mu.Lock()
	g, ok := c.versions[string(snapshot)]
	c.mu.Unlock()
	if ok && published {
		return g, snapshot, "", nil
	}
	if errs := flowvalidation.ValidateDefinition(&def, field.NewPath("definition")); len(errs) > 0 {
		return nil, nil, invalid(errs.ToAggregate()), nil
	}
	if g, err = graphOf(def); err != nil {
		return nil, nil, err.Error(), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.versions == nil || len(c.versions) >= maxPinned {
		c.versions = map[string]*graph{}
	}
	if published {
		c.versions[string(snapshot)] = g
	}
	return g, snapshot, "", nil
}

// graphCache keeps the graphs of pinned snapshots, keyed by their bytes like pinnedCache.
type graphCache struct {
	mu     sync.Mutex
	graphs map[string]*graph
}

// pinnedGraphs is the process's one graphCache: every executor reads the snapshots of the runs it
// executes, and the Workplace projection the same ones for the steps its events name
// (PinnedSteps); decoding a snapshot at each projected run was a twentieth of a WorkItem's CPU.
var pinnedGraphs graphCache

// graph is the graph of a run's pinned snapshot; reason says why it has none.
func (c *graphCache) graph(snapshot json.RawMessage) (*graph, string) {
	c.mu.Lock()
	g, ok := c.graphs[string(snapshot)]
	c.mu.Unlock()
	if ok {
		return g, ""
	}
	var def platformv1.FlowDefinition
	if err := json.Unmarshal(snapshot, &def); err != nil {
		return nil, fmt.Sprintf("the pinned flow snapshot is unreadable: %v", err)
	}
	g, err := graphOf(def)
	if err != nil {
		return nil, err.Error()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.graphs == nil || len(c.graphs) >= maxPinned {
		c.graphs = map[string]*graph{}
	}
	c.graphs[string(snapshot)] = g
	return g, ""
}

// agentsOf is what a run's pinned agents decode to; reason says why they do not.
func (c *pinnedCache) agentsOf(pinned json.RawMessage) (map[string]provider.Agent, string) {
	if len(pinned) == 0 {
		return map[string]provider.Agent{}, ""
	}
	c.mu.Lock()
	agents, ok := c.agents[string(pinned)]
	c.mu.Unlock()
	if ok {
		return agents, ""
	}
	agents = map[string]provider.Agent{}
	if err := json.Unmarshal(pinned, &agents); err != nil {
		return nil, fmt.Sprintf("the pinned agents are unreadable: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.agents == nil || len(c.agents) >= maxPinned {
		c.agents = map[string]map[string]provider.Agent{}
	}
	c.agents[string(pinned)] = agents
	return agents, ""
}
