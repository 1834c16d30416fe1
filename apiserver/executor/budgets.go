package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/provider"
	"platform.dev/platform/apiserver/usage"
	"platform.dev/platform/apiserver/work"
	"platform.dev/platform/internal/resourcenamespace"
)

// EntryRef is the Entry a run came from: its resource namespace and name.
type EntryRef struct {
	ResourceNamespace string
	Name              string
}

// Recorded is how usage names the Entry: its name for the workspace's own Entries, else
// "publisher.name/name" (as the Work API's status.entry).
func (e EntryRef) Recorded() string { return RecordedName(e.ResourceNamespace, e.Name) }

// RecordedName is how usage and budgets name an object of a workspace's resource namespace rns:
// its name in `default`, "publisher.name/name" in a Pack's, so that a Pack's agent and the
// workspace's own agent of the same name are told apart, with the name people see in the Pack.
func RecordedName(rns, name string) string {
	if name == "" || rns == "" || rns == string(platformv1.DefaultResourceNamespace) {
		return name
	}
	return rns + "/" + name
}

// Budgets tells the executor which Entry a run came from and which budgets its model calls
// count against.
type Budgets interface {
	// Entry is the Entry run came from; the zero EntryRef when none.
	Entry(ctx context.Context, run *work.FlowRun) (EntryRef, error)
	// Limits are the budgets a model call of agent in run counts against: its workspace's, its
	// Entry's and the agent's (named as RecordedName names it).
	Limits(ctx context.Context, run *work.FlowRun, entry EntryRef, agent string) ([]usage.Limit, error)
	// ResourceNamespace is the resource namespace of the run's Flow and agents (run.Namespace):
	// `default` or a Pack's `publisher.name`.
	ResourceNamespace(ctx context.Context, run *work.FlowRun) (string, error)
}

// KubeBudgets reads budgets from the workspace's namespace annotations (over the instance's
// Platform:Budgets:* defaults), the Entry and the Agent, live: a changed budget applies to the
// next model call.
type KubeBudgets struct {
	Client   client.Reader
	Settings usage.Getter
	// EntryOf is the Entry an Interaction was opened from (its resource namespace and name).
	EntryOf func(ctx context.Context, workspaceID, interactionID string) (resourceNamespace, name string, err error)
}

// Entry reads the Entry of the run's conversation.
func (b KubeBudgets) Entry(ctx context.Context, run *work.FlowRun) (EntryRef, error) {
	if run.InteractionID == "" || b.EntryOf == nil {
		return EntryRef{}, nil
	}
	rns, name, err := b.EntryOf(ctx, run.WorkspaceID, run.InteractionID)
	return EntryRef{ResourceNamespace: rns, Name: name}, err
}

// ResourceNamespace reads the resource namespace of the run's namespace.
func (b KubeBudgets) ResourceNamespace(ctx context.Context, run *work.FlowRun) (string, error) {
	ns := &corev1.Namespace{}
	if err := b.Client.Get(ctx, client.ObjectKey{Name: run.Namespace}, ns); err != nil {
		return "", fmt.Errorf("the namespace of the run: %w", err)
	}
	return string(resourcenamespace.Of(ns)), nil
}

// Limits reads the three scopes' budgets.
func (b KubeBudgets) Limits(ctx context.Context, run *work.FlowRun, entry EntryRef, agent string) ([]usage.Limit, error) {
	ns := &corev1.Namespace{}
	if err := b.Client.Get(ctx, client.ObjectKey{Name: run.Namespace}, ns); err != nil {
		return nil, fmt.Errorf("the namespace of the run: %w", err)
	}
	agentRNS := string(resourcenamespace.Of(ns))
	if workspace := resourcenamespace.WorkspaceOf(ns); workspace != ns.Name {
		if err := b.Client.Get(ctx, client.ObjectKey{Name: workspace}, ns); err != nil {
			return nil, fmt.Errorf("the namespace of the workspace: %w", err)
		}
	}
	limits := usage.WorkspaceBudgets(ns.Name, b.Settings, ns.Annotations)
	if entry.Name != "" {
		entryNS, err := resourcenamespace.Resolve(ctx, b.Client, run.Namespace, platformv1.ResourceNamespace(entry.ResourceNamespace))
		if err != nil && !errors.Is(err, resourcenamespace.ErrNotFound) {
			return nil, err
		}
		e := &platformv1.Entry{}
		if err == nil {
			err = b.Client.Get(ctx, client.ObjectKey{Namespace: entryNS, Name: entry.Name}, e)
		}
		switch {
		case err == nil:
			l, err := usage.LimitsOf(usage.ScopeEntry, entry.Recorded(), e.Definition.Budgets)
			if err != nil {
				return nil, err
			}
			limits = append(limits, l...)
		case !apierrors.IsNotFound(err) && !errors.Is(err, resourcenamespace.ErrNotFound):
			return nil, err
		}
	}
	a := &platformv1.Agent{}
	switch err := b.Client.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: agent}, a); {
	case err == nil:
		l, err := usage.LimitsOf(usage.ScopeAgent, RecordedName(agentRNS, agent), a.Definition.Budgets)
		if err != nil {
			return nil, err
		}
		limits = append(limits, l...)
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	return limits, nil
}

// entryOf is the Entry of the run this execution drives, read once per execution.
func (e *Executor) entryOf(ctx context.Context, run *work.FlowRun) (EntryRef, error) {
	if e.budgets == nil {
		return EntryRef{}, nil
	}
	drive, _ := ctx.Value(driveKey{}).(*driveState)
	if drive != nil && drive.entryRead {
		return drive.entry, nil
	}
	entry, err := e.budgets.Entry(ctx, run)
	if err == nil && drive != nil {
		drive.entry, drive.entryRead = entry, true
	}
	return entry, err
}

// agentName is how usage and budgets name agent of the run: with the resource namespace of the
// run's Flow when it is a Pack's (RecordedName), read once per execution.
func (e *Executor) agentName(ctx context.Context, run *work.FlowRun, agent string) (string, error) {
	if e.budgets == nil {
		return agent, nil
	}
	drive, _ := ctx.Value(driveKey{}).(*driveState)
	if drive != nil && drive.resourceNamespaceRead {
		return RecordedName(drive.resourceNamespace, agent), nil
	}
	rns, err := e.budgets.ResourceNamespace(ctx, run)
	if err != nil {
		return "", err
	}
	if drive != nil {
		drive.resourceNamespace, drive.resourceNamespaceRead = rns, true
	}
	return RecordedName(rns, agent), nil
}

// modelCall is the usage of one model call of an Agent step, priced: by its ModelProvider's
// pricing, else (the Deterministic model) by the instance's price of it; nil when the provider
// reported no usage.
func (e *Executor) modelCall(ctx context.Context, run *work.FlowRun, step platformv1.FlowStep, agent provider.Agent, act provider.Action) (*work.ModelCall, error) {
	if act.Usage == nil {
		return nil, nil
	}
	entry, err := e.entryOf(ctx, run)
	if err != nil {
		return nil, err
	}
	name, err := e.agentName(ctx, run, agent.Name)
	if err != nil {
		return nil, err
	}
	mc := &work.ModelCall{Step: step.Name, Attempt: run.Attempt, Agent: name, Entry: entry.Recorded(), ModelProvider: act.ModelProvider,
		Model: act.Model, InputTokens: act.Usage.InputTokens, OutputTokens: act.Usage.OutputTokens}
	price := act.Usage.Price
	if price == nil && act.Model == provider.DeterministicModel {
		price = e.deterministicPrice
	}
	if price != nil {
		mc.CostMicros, mc.Currency = price.Cost(mc.InputTokens, mc.OutputTokens), price.Currency
	}
	return mc, nil
}

// checkBudgets is what an Agent step does before a model call: nothing (nil) when no budget of
// the call's scopes is used up, or one that is was approved for this run in its period; a
// failure when continuing past it was rejected; else a suspension on an approval to continue.
func (e *Executor) checkBudgets(ctx context.Context, run *work.FlowRun, step platformv1.FlowStep, agent provider.Agent) *outcome {
	if e.budgets == nil {
		return nil
	}
	entry, err := e.entryOf(ctx, run)
	if err != nil {
		return e.transient(run, step, agent, fmt.Errorf("reading the Entry of the run: %w", err))
	}
	limits, err := e.budgets.Limits(ctx, run, entry, agent.Name)
	if err != nil {
		return e.transient(run, step, agent, fmt.Errorf("reading the budgets of the call: %w", err))
	}
	if len(limits) == 0 {
		return nil
	}
	agentName, err := e.agentName(ctx, run, agent.Name)
	if err != nil {
		return e.transient(run, step, agent, fmt.Errorf("reading the resource namespace of the run: %w", err))
	}
	// What the budgets count is read from the store: the usage of the run's earlier calls that
	// is still staged with their uncommitted transitions (answers made in the process) is
	// committed first, or a run would count none of its own calls.
	if err := provider.BeforeOutsideCall(ctx); err != nil {
		return &outcome{err: err}
	}
	data, err := run.DecodeData()
	if err != nil {
		return failed("%v", err).ptr()
	}
	now := time.Now()
	for _, l := range limits {
		start := usage.PeriodStart(l.Period, now)
		key := l.Key(start)
		decision, decided := data.Budgets[key]
		if decided && decision.Approved {
			continue
		}
		tokens, cost, err := e.work.UsedSince(ctx, run.WorkspaceID, l.Scope, l.Name, usage.Day(start), l.Currency)
		if err != nil {
			return &outcome{err: err}
		}
		if !l.Exceeded(tokens, cost) {
			continue
		}
		what := fmt.Sprintf("the budget of %s %s (%s)", l.Scope, l.Name, l.Describe())
		if decided {
			reason := decision.Reason
			if reason == "" {
				reason = "no reason was given"
			}
			who := "a person declined"
			if decision.By == work.ExpiryDecider {
				who = "nobody approved in time"
			}
			return failed("Agent step %q: %s is used up and %s to continue past it: %s", step.Name, what, who, reason).ptr()
		}
		crossing := &work.BudgetCrossing{Scope: l.Scope, Name: l.Name, Period: string(l.Period), PeriodStart: start.Format(usage.DayLayout),
			LimitTokens: l.Tokens, UsedTokens: tokens, Agent: agentName, Key: key}
		if l.CostMicros > 0 {
			crossing.LimitCost, crossing.UsedCost = usage.MoneyOf(l.CostMicros, l.Currency), usage.MoneyOf(cost, l.Currency)
		}
		used := fmt.Sprintf("%d tokens", tokens)
		if l.CostMicros > 0 {
			used += " and " + usage.ShortMicros(cost) + " " + l.Currency
		}
		sus := &work.Suspension{Step: step.Name, Kind: work.KindApproval, Continuation: step.Name, Budget: crossing,
			Prompt: fmt.Sprintf("Continue past %s? This %s used %s; agent %q waits to call its model again.",
				what, map[platformv1.BudgetPeriod]string{platformv1.DayBudget: "day", platformv1.WeekBudget: "week", platformv1.MonthBudget: "month"}[l.Period],
				used, agentName)}
		applyExpiry(sus, l.Expiry)
		return &outcome{suspend: sus}
	}
	return nil
}
