// Package triggers is the Triggers area of the service API: the Trigger resources of a workspace
// (the default route family /api/triggers and the namespaced one
// /api/namespaces/{namespace}/triggers), with ETag-protected writes, enable, disable, Run now,
// the occurrence history, and a preview of the next instants of a proposed schedule.
package triggers

import (
	"context"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/apiserver/httpapi"
	domain "platform.dev/platform/apiserver/triggers"
)

const tagTriggers = "Triggers"

// Bounds of the reads.
const (
	maxOccurrences     = 1000
	defaultOccurrences = 100
	maxPreview         = 100
	defaultPage        = 50
	maxPage            = 100
)

// ResumedAtAnnotation records when the service API last resumed a paused Trigger: the write
// that tells its scheduler to look again.
const ResumedAtAnnotation = "platform/resumed-at"

type routes struct{ *httpapi.Server }

// Routes registers the Triggers of the request's workspace.
func Routes(s *httpapi.Server) {
	r := &routes{s}
	s.AddTags(&huma.Tag{Name: tagTriggers, Description: "Triggers: declarative schedules (once, interval, cron in an IANA time zone) " +
		"that submit autonomous Work to a Flow of the workspace, each scheduled instant at most once, as the Trigger's owner."})
	for _, f := range []family{
		{prefix: "/api/triggers", suffix: "", where: "of the workspace"},
		{prefix: "/api/namespaces/{namespace}/triggers", suffix: "-in-namespace", where: "of a resource namespace of the workspace"},
	} {
		r.register(f)
	}
	r.registerPreview()
}

// family is one route family: the default resource namespace, or a named one.
type family struct{ prefix, suffix, where string }

// Path inputs of the two families. Namespace is empty in the default family.
type (
	DefaultCollection struct {
		httpapi.WorkspaceInput
	}
	NamespacedCollection struct {
		httpapi.WorkspaceInput
		Namespace string `path:"namespace" maxLength:"127" doc:"Resource namespace: default, or a Pack's publisher.name"`
	}
	DefaultItem struct {
		httpapi.WorkspaceInput
		Name string `path:"name" maxLength:"253" doc:"Name of the Trigger (metadata.name)"`
	}
	NamespacedItem struct {
		httpapi.WorkspaceInput
		Namespace string `path:"namespace" maxLength:"127" doc:"Resource namespace: default, or a Pack's publisher.name"`
		Name      string `path:"name" maxLength:"253" doc:"Name of the Trigger (metadata.name)"`
	}
)

type collection interface {
	resourceNamespace() platformv1.ResourceNamespace
}
type item interface {
	collection
	triggerName() string
}

func (DefaultCollection) resourceNamespace() platformv1.ResourceNamespace {
	return platformv1.DefaultResourceNamespace
}
func (in NamespacedCollection) resourceNamespace() platformv1.ResourceNamespace {
	return resourceNamespaceOf(in.Namespace)
}
func (DefaultItem) resourceNamespace() platformv1.ResourceNamespace {
	return platformv1.DefaultResourceNamespace
}
func (in DefaultItem) triggerName() string { return in.Name }
func (in NamespacedItem) resourceNamespace() platformv1.ResourceNamespace {
	return resourceNamespaceOf(in.Namespace)
}
func (in NamespacedItem) triggerName() string { return in.Name }

// Options of the operations.
type (
	// ToggleOptions are the options of enable and disable.
	ToggleOptions struct {
		IfMatch string `header:"If-Match" doc:"Optional: the Trigger's ETag as last read; a stale value is refused with 412"`
	}
	// RunOptions are the options of Run now.
	RunOptions struct {
		IdempotencyKey string `header:"Idempotency-Key" maxLength:"128" doc:"Optional: a retried Run now with the same key submits once and answers the same occurrence"`
	}
	// ListOptions page through the Triggers, in name order, as the Management lists do.
	ListOptions struct {
		Take   int    `query:"take" minimum:"1" maximum:"100" default:"50" doc:"At most this many Triggers: 50 unless given, at most 100"`
		Skip   int    `query:"skip" minimum:"0" maximum:"100000" doc:"Triggers to skip, for the next page: the previous skip plus take"`
		Search string `query:"search" maxLength:"256" doc:"Case-insensitive words that must all appear in the Trigger's name, display name, target Flow, schedule (type, expression, time zone) or state (Enabled, Disabled, Paused)"`
	}
	// HistoryOptions bound the history read.
	HistoryOptions struct {
		Limit int `query:"limit" minimum:"1" maximum:"1000" default:"100" doc:"At most this many occurrences, newest first"`
	}
)

// Inputs of the operations, per family.
type (
	createDefault struct {
		DefaultCollection
		Body Trigger
	}
	createNamespaced struct {
		NamespacedCollection
		Body Trigger
	}
	replaceDefault struct {
		DefaultItem
		httpapi.IfMatchInput
		Body Trigger
	}
	replaceNamespaced struct {
		NamespacedItem
		httpapi.IfMatchInput
		Body Trigger
	}
	deleteDefault struct {
		DefaultItem
		httpapi.IfMatchInput
	}
	deleteNamespaced struct {
		NamespacedItem
		httpapi.IfMatchInput
	}
	toggleDefault struct {
		DefaultItem
		ToggleOptions
	}
	toggleNamespaced struct {
		NamespacedItem
		ToggleOptions
	}
	runDefault struct {
		DefaultItem
		RunOptions
	}
	runNamespaced struct {
		NamespacedItem
		RunOptions
	}
	listDefault struct {
		DefaultCollection
		ListOptions
	}
	listNamespaced struct {
		NamespacedCollection
		ListOptions
	}
	occurrencesDefault struct {
		DefaultItem
		HistoryOptions
	}
	occurrencesNamespaced struct {
		NamespacedItem
		HistoryOptions
	}
)

type triggerOutput struct {
	ETag string `header:"ETag" doc:"The Trigger's current ETag, for If-Match on the next write"`
	Body Trigger
}

type createdOutput struct {
	Status int
	ETag   string `header:"ETag" doc:"The Trigger's current ETag"`
	Body   Trigger
}

type occurrenceOutput struct {
	Status int
	Body   Occurrence
}

func (r *routes) register(f family) {
	api := r.API()
	op := func(id, method, path, summary, description, policy string, status int, errs ...int) huma.Operation {
		return httpapi.Secured(huma.Operation{OperationID: id + f.suffix, Method: method, Path: path, Tags: []string{tagTriggers},
			Summary: summary, Description: description, DefaultStatus: status, Errors: errs}, policy)
	}
	itemPath := f.prefix + "/{name}"

	list := op("list-triggers", http.MethodGet, f.prefix, "List the Triggers "+f.where,
		"A page at a time, in name order: take (at most 100) Triggers after skip, of those search matches. A page shorter "+
			"than take is the last; ask for take+1 to know whether another follows.",
		httpapi.PolicyResourcesRead, 0)
	get := op("get-trigger", http.MethodGet, itemPath, "Read a Trigger", "With its next instant, its latest occurrence and its owner.",
		httpapi.PolicyResourcesRead, 0)
	create := op("create-trigger", http.MethodPost, f.prefix, "Create a Trigger",
		"The caller becomes the Trigger's owner: it fires as the caller, whose runs/execute is evaluated again at every firing. "+
			"An unknown time zone, an expression that does not parse for its type, a once instant in the past, an unknown policy "+
			"or a target Flow that does not exist in the workspace is 422 with the field path; nothing is scheduled.",
		httpapi.PolicyResourcesWrite, http.StatusCreated, http.StatusConflict, http.StatusUnprocessableEntity)
	replace := op("replace-trigger", http.MethodPut, itemPath, "Replace a Trigger's metadata and definition",
		"Needs the current ETag in If-Match (428 without, 412 when stale). The caller becomes the owner. A changed schedule "+
			"owes nothing before the change; a changed definition resumes a paused Trigger.",
		httpapi.PolicyResourcesWrite, http.StatusOK, http.StatusPreconditionRequired, http.StatusPreconditionFailed, http.StatusUnprocessableEntity)
	remove := op("delete-trigger", http.MethodDelete, itemPath, "Delete a Trigger",
		"Needs the current ETag in If-Match. Its schedule and occurrence history go with it; the Work and Tasks it submitted stay.",
		httpapi.PolicyResourcesDelete, http.StatusNoContent, http.StatusPreconditionRequired, http.StatusPreconditionFailed)
	enable := op("enable-trigger", http.MethodPost, itemPath+"/enable", "Enable a Trigger",
		"Sets definition.enabled and makes the caller the owner; nothing is owed for the time it was disabled. It also resumes a "+
			"Trigger paused after pauseAfterFailures consecutive failures. Enabling an enabled Trigger changes nothing else.",
		httpapi.PolicyResourcesWrite, http.StatusOK, http.StatusPreconditionFailed)
	disable := op("disable-trigger", http.MethodPost, itemPath+"/disable", "Disable a Trigger",
		"Clears definition.enabled: the Trigger fires no more until enabled. Its history stays.",
		httpapi.PolicyResourcesWrite, http.StatusOK, http.StatusPreconditionFailed)
	run := op("run-trigger", http.MethodPost, itemPath+"/run", "Run a Trigger now",
		"Submits the Trigger's Work at once, as the caller: a Manual occurrence with an identity of its own (from Idempotency-Key, "+
			"else fresh), whatever the schedule, the enablement and the concurrency policy. 202 with the occurrence and its Task; "+
			"409 when it could not submit (the Flow is missing or disabled, ...), with the reason; the occurrence is recorded either way.",
		httpapi.PolicyRunsExecute, http.StatusAccepted, http.StatusConflict)
	occurrences := op("list-trigger-occurrences", http.MethodGet, itemPath+"/occurrences", "List the occurrence history of a Trigger",
		fmt.Sprintf("Newest first. Each occurrence: scheduled instant, when it fired, outcome, reason, the Work and Task it submitted. "+
			"The history keeps the latest %d occurrences per Trigger (and any whose Work is still active).", domain.DefaultHistoryLimit),
		httpapi.PolicyRunsRead, 0)

	type listOut = httpapi.ListOutput[Trigger]
	type historyOut = httpapi.ListOutput[Occurrence]
	if f.suffix == "" {
		huma.Register(api, list, func(ctx context.Context, in *listDefault) (*listOut, error) {
			return r.list(ctx, in.DefaultCollection, in.ListOptions)
		})
		huma.Register(api, get, func(ctx context.Context, in *DefaultItem) (*triggerOutput, error) { return r.get(ctx, in) })
		huma.Register(api, create, func(ctx context.Context, in *createDefault) (*createdOutput, error) {
			return r.create(ctx, in.DefaultCollection, in.Body)
		})
		huma.Register(api, replace, func(ctx context.Context, in *replaceDefault) (*triggerOutput, error) {
			return r.replace(ctx, in.DefaultItem, in.IfMatchInput, in.Body)
		})
		huma.Register(api, remove, func(ctx context.Context, in *deleteDefault) (*struct{}, error) {
			return nil, r.delete(ctx, in.DefaultItem, in.IfMatchInput)
		})
		huma.Register(api, enable, func(ctx context.Context, in *toggleDefault) (*triggerOutput, error) {
			return r.toggle(ctx, in.DefaultItem, in.ToggleOptions, true)
		})
		huma.Register(api, disable, func(ctx context.Context, in *toggleDefault) (*triggerOutput, error) {
			return r.toggle(ctx, in.DefaultItem, in.ToggleOptions, false)
		})
		huma.Register(api, run, func(ctx context.Context, in *runDefault) (*occurrenceOutput, error) {
			return r.run(ctx, in.DefaultItem, in.RunOptions)
		})
		huma.Register(api, occurrences, func(ctx context.Context, in *occurrencesDefault) (*historyOut, error) {
			return r.occurrences(ctx, in.DefaultItem, in.HistoryOptions)
		})
		return
	}
	huma.Register(api, list, func(ctx context.Context, in *listNamespaced) (*listOut, error) {
		return r.list(ctx, in.NamespacedCollection, in.ListOptions)
	})
	huma.Register(api, get, func(ctx context.Context, in *NamespacedItem) (*triggerOutput, error) { return r.get(ctx, in) })
	huma.Register(api, create, func(ctx context.Context, in *createNamespaced) (*createdOutput, error) {
		return r.create(ctx, in.NamespacedCollection, in.Body)
	})
	huma.Register(api, replace, func(ctx context.Context, in *replaceNamespaced) (*triggerOutput, error) {
		return r.replace(ctx, in.NamespacedItem, in.IfMatchInput, in.Body)
	})
	huma.Register(api, remove, func(ctx context.Context, in *deleteNamespaced) (*struct{}, error) {
		return nil, r.delete(ctx, in.NamespacedItem, in.IfMatchInput)
	})
	huma.Register(api, enable, func(ctx context.Context, in *toggleNamespaced) (*triggerOutput, error) {
		return r.toggle(ctx, in.NamespacedItem, in.ToggleOptions, true)
	})
	huma.Register(api, disable, func(ctx context.Context, in *toggleNamespaced) (*triggerOutput, error) {
		return r.toggle(ctx, in.NamespacedItem, in.ToggleOptions, false)
	})
	huma.Register(api, run, func(ctx context.Context, in *runNamespaced) (*occurrenceOutput, error) {
		return r.run(ctx, in.NamespacedItem, in.RunOptions)
	})
	huma.Register(api, occurrences, func(ctx context.Context, in *occurrencesNamespaced) (*historyOut, error) {
		return r.occurrences(ctx, in.NamespacedItem, in.HistoryOptions)
	})
}
