// Package workapi serves the Work plane in the kube API as the native group work.platform.dev/v1:
// Tasks, Interactions, FlowRuns, PendingActions, WorkItems, TriggerOccurrences and the caller's
// Notifications, read from the SQL store (the rows never move into etcd) under the kube API's
// authorizer, so that kubectl and controller-runtime clients get, list and watch them like any
// kind. A namespace is a workspace (its route name); another workspace's object is not found, and
// reads across namespaces cover the workspaces the caller may read runs in. Watches follow the
// Workplace outbox that feeds the real-time hub: a resourceVersion's position is the workspace's
// outbox position (see setRV).
package workapi

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	workv1 "platform.dev/platform/apis/work/v1"
	"platform.dev/platform/apiserver/identity"
	"platform.dev/platform/apiserver/notify"
	"platform.dev/platform/apiserver/store"
	"platform.dev/platform/apiserver/workplace"
)

// Options are what the group reads and who it serves.
type Options struct {
	// DB is the SQL store of the Work and Workplace planes.
	DB *store.Store
	// Identity maps namespaces to workspaces.
	Identity *identity.Service
	// Changes is the Work store's hub: the outbox's topics wake the watches.
	Changes *notify.Hub
	// Workplace deletes Tasks as the service API does.
	Workplace *workplace.Store
	// Runs pauses, resumes, cancels and deletes runs as the service API does.
	Runs RunControl
	// Wake tells the executor that a resumed run is runnable (optional).
	Wake func()
	// Readable are the workspaces where a user may read runs, for lists and watches across
	// namespaces; all for users whom the authorizer lets read everything. Without it, every
	// workspace.
	Readable func(ctx context.Context, u user.Info) (workspaces []identity.Workspace, all bool, err error)
	// Limits bound the watches; DefaultWatchLimits where zero.
	Limits WatchLimits
	Log    logr.Logger
}

// API is the served group.
type API struct {
	Options
	reader    reader
	outbox    outboxReader
	feeds     *feeds
	resources []*resource
}

// New returns the group's storage; ctx bounds its watches (they end when it ends).
func New(ctx context.Context, opts Options) (*API, error) {
	if opts.DB == nil || opts.Identity == nil || opts.Changes == nil {
		return nil, fmt.Errorf("work.platform.dev needs the SQL store, the identity service and the change hub")
	}
	d := DefaultWatchLimits
	for _, l := range []struct {
		v   *int
		def int
	}{{&opts.Limits.MaxWatches, d.MaxWatches}, {&opts.Limits.MaxWatchesPerUser, d.MaxWatchesPerUser}, {&opts.Limits.Queue, d.Queue}} {
		if *l.v <= 0 {
			*l.v = l.def
		}
	}
	if opts.Limits.MaxLifetime <= 0 {
		opts.Limits.MaxLifetime = d.MaxLifetime
	}
	if opts.Limits.BookmarkEvery <= 0 {
		opts.Limits.BookmarkEvery = d.BookmarkEvery
	}
	a := &API{Options: opts}
	a.reader.db = opts.DB
	a.outbox = outboxReader{&a.reader}
	a.feeds = &feeds{api: a, ctx: ctx, limits: opts.Limits, m: map[string]*feed{}, perUser: map[string]int{}}
	a.resources = []*resource{tasksResource, interactionsResource, flowRunsResource, pendingActionsResource, workItemsResource,
		notificationsResource, triggerOccurrencesResource}
	return a, nil
}

// Queries is how many SQL statements the group's reads ran: lists, gets and the feeds' outbox
// reads (watches that are only open run none).
func (a *API) Queries() int64 { return a.reader.queries.Load() }

// Watches is how many watches are open.
func (a *API) Watches() int {
	a.feeds.mu.Lock()
	defer a.feeds.mu.Unlock()
	return a.feeds.total
}

func (a *API) groupResource(plural string) schema.GroupResource { return workv1.Resource(plural) }

// Install adds the group to server, in its discovery and OpenAPI document.
func (a *API) Install(server *genericapiserver.GenericAPIServer) error {
	group := genericapiserver.NewDefaultAPIGroupInfo(workv1.GroupName, Scheme, ParameterCodec, Codecs)
	storage := map[string]rest.Storage{}
	for _, res := range a.resources {
		read := &readREST{resource: res, api: a}
		switch res.plural {
		case "tasks":
			storage[res.plural] = &taskREST{watchableREST: &watchableREST{read}}
			for _, op := range taskOperations {
				storage[res.plural+"/"+op] = &taskOperationREST{api: a, op: op}
			}
		case "flowruns":
			storage[res.plural] = &flowRunREST{watchableREST: &watchableREST{read}}
		default:
			storage[res.plural] = &watchableREST{read}
		}
	}
	group.VersionedResourcesStorageMap[workv1.SchemeGroupVersion.Version] = storage
	return server.InstallAPIGroup(&group)
}

func objectFields(obj runtime.Object, extra fields.Set) (labels.Set, fields.Set, error) {
	m := metaOf(obj)
	f := generic.MergeFieldsSets(fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}, extra)
	return m.GetLabels(), f, nil
}

func payloadString(p map[string]any, key string) string {
	s, _ := p[key].(string)
	return s
}

var tasksResource = &resource{
	plural: "tasks", singular: "task", kind: "Task", shortNames: []string{"tk"},
	newObj: func() runtime.Object { return &workv1.Task{} }, newList: func() runtime.Object { return &workv1.TaskList{} },
	reads: taskReads{},
	attrs: func(obj runtime.Object) (labels.Set, fields.Set, error) {
		t := obj.(*workv1.Task)
		return objectFields(obj, fields.Set{"status.state": t.Status.State, "status.entry": t.Status.Entry,
			"status.trigger": t.Status.Trigger, "status.interaction": t.Status.Interaction})
	},
	table: taskTable,
	about: func(name string, p map[string]any) (string, bool, bool) {
		switch name {
		case workplace.EventTaskCreated:
			return payloadString(p, "taskId"), true, true
		case workplace.EventTaskStatusChanged, workplace.EventTaskActivityAdded, workplace.EventTaskResultAdded,
			workplace.EventTaskArtifactAdded, workplace.EventPendingActionCreated, workplace.EventPendingActionResolved:
			return payloadString(p, "taskId"), false, true
		}
		return "", false, false
	},
}

var interactionsResource = &resource{
	plural: "interactions", singular: "interaction", kind: "Interaction", shortNames: []string{"ia"},
	newObj: func() runtime.Object { return &workv1.Interaction{} }, newList: func() runtime.Object { return &workv1.InteractionList{} },
	reads: interactionReads{},
	attrs: func(obj runtime.Object) (labels.Set, fields.Set, error) {
		i := obj.(*workv1.Interaction)
		return objectFields(obj, fields.Set{"status.state": i.Status.State, "status.entry": i.Status.Entry})
	},
	table: interactionTable,
	about: func(name string, p map[string]any) (string, bool, bool) {
		switch name {
		case workplace.EventInteractionUpdated, workplace.EventMessageAdded, workplace.EventPendingActionCreated,
			workplace.EventPendingActionResolved:
			return payloadString(p, "interactionId"), false, true
		}
		return "", false, false
	},
}

// changedRun names the run or the WorkItem (key) a FlowRunChanged event is about.
func changedRun(key string) func(name string, p map[string]any) (string, bool, bool) {
	return func(name string, p map[string]any) (string, bool, bool) {
		if name != workplace.EventFlowRunChanged {
			return "", false, false
		}
		created, _ := p["created"].(bool)
		return payloadString(p, key), created, true
	}
}

// flowRunsResource: each transition of a run is in the outbox (FlowRunChanged).
var flowRunsResource = &resource{
	plural: "flowruns", singular: "flowrun", kind: "FlowRun", shortNames: []string{"fr"},
	newObj: func() runtime.Object { return &workv1.FlowRun{} }, newList: func() runtime.Object { return &workv1.FlowRunList{} },
	reads: flowRunReads{},
	attrs: func(obj runtime.Object) (labels.Set, fields.Set, error) {
		f := obj.(*workv1.FlowRun)
		return objectFields(obj, fields.Set{"status.state": f.Status.State, "status.flow": f.Status.Flow,
			"status.task": f.Status.Task, "status.interaction": f.Status.Interaction})
	},
	table: flowRunTable,
	about: changedRun("flowRunId"),
}

var pendingActionsResource = &resource{
	plural: "pendingactions", singular: "pendingaction", kind: "PendingAction", shortNames: []string{"pa"},
	newObj: func() runtime.Object { return &workv1.PendingAction{} }, newList: func() runtime.Object { return &workv1.PendingActionList{} },
	reads: pendingActionReads,
	attrs: func(obj runtime.Object) (labels.Set, fields.Set, error) {
		a := obj.(*workv1.PendingAction)
		return objectFields(obj, fields.Set{"status.state": a.Status.State, "status.task": a.Status.Task,
			"status.interaction": a.Status.Interaction, "status.flowRun": a.Status.FlowRun})
	},
	table: pendingActionTable,
	about: func(name string, p map[string]any) (string, bool, bool) {
		switch name {
		case workplace.EventPendingActionCreated:
			// An escalation tells the question anew (escalated): the object changed, it is not new.
			escalated, _ := p["escalated"].(bool)
			return payloadString(p, "pendingActionId"), !escalated, true
		case workplace.EventPendingActionResolved:
			return payloadString(p, "pendingActionId"), false, true
		}
		return "", false, false
	},
}

var workItemsResource = &resource{
	plural: "workitems", singular: "workitem", kind: "WorkItem", shortNames: []string{"wi"},
	newObj: func() runtime.Object { return &workv1.WorkItem{} }, newList: func() runtime.Object { return &workv1.WorkItemList{} },
	reads: workItemReads,
	attrs: func(obj runtime.Object) (labels.Set, fields.Set, error) {
		w := obj.(*workv1.WorkItem)
		return objectFields(obj, fields.Set{"status.state": w.Status.State, "status.flow": w.Status.Flow,
			"status.task": w.Status.Task, "status.interaction": w.Status.Interaction})
	},
	table: workItemTable,
	// A WorkItem's status mirrors its run's state: it changes with the run's transitions.
	about: changedRun("workItemId"),
}

// notificationsResource: a caller lists and reads their own notifications only.
var notificationsResource = &resource{
	plural: "notifications", singular: "notification", kind: "Notification", shortNames: []string{"ntf"},
	newObj: func() runtime.Object { return &workv1.Notification{} }, newList: func() runtime.Object { return &workv1.NotificationList{} },
	reads: notificationReads,
	attrs: func(obj runtime.Object) (labels.Set, fields.Set, error) {
		n := obj.(*workv1.Notification)
		return objectFields(obj, fields.Set{"status.kind": n.Status.Kind})
	},
	table: notificationTable,
	// The events of a Principal's notifications are addressed to that Principal: a watch receives
	// its caller's only (see changesOf).
	about: func(name string, p map[string]any) (string, bool, bool) {
		switch name {
		case workplace.EventNotificationCreated:
			return payloadString(p, "notificationId"), true, true
		case workplace.EventNotificationUpdated, workplace.EventNotificationRead:
			return payloadString(p, "notificationId"), false, true
		}
		return "", false, false
	},
	personal: true,
}

var triggerOccurrencesResource = &resource{
	plural: "triggeroccurrences", singular: "triggeroccurrence", kind: "TriggerOccurrence", shortNames: []string{"tro"},
	newObj: func() runtime.Object { return &workv1.TriggerOccurrence{} }, newList: func() runtime.Object { return &workv1.TriggerOccurrenceList{} },
	reads: triggerOccurrenceReads,
	attrs: func(obj runtime.Object) (labels.Set, fields.Set, error) {
		o := obj.(*workv1.TriggerOccurrence)
		return objectFields(obj, fields.Set{"status.trigger": o.Status.Trigger, "status.outcome": o.Status.Outcome})
	},
	table: triggerOccurrenceTable,
	about: func(name string, p map[string]any) (string, bool, bool) {
		if name == workplace.EventTriggerOccurrenceRecorded {
			return payloadString(p, "triggerOccurrenceId"), true, true
		}
		return "", false, false
	},
}
