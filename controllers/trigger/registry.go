package trigger

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// registry keeps one schedule registration per enabled Trigger: a timer of the clock at the
// Trigger's next firing, which sends the Trigger to the reconciler. It lives in memory only: the
// reconciler registers every Trigger again when it starts (each Trigger is reconciled once then).
type registry struct {
	clock  clock.WithDelayedExecution
	events chan event.GenericEvent

	mu      sync.Mutex
	entries map[types.NamespacedName]*registration
}

type registration struct {
	at    time.Time
	timer clock.Timer
}

func newRegistry(c clock.WithDelayedExecution) *registry {
	return &registry{clock: c, events: make(chan event.GenericEvent, 1024), entries: map[types.NamespacedName]*registration{}}
}

// register makes at the Trigger's next firing, replacing its registration.
func (r *registry) register(key types.NamespacedName, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.entries[key]; ok {
		if e.at.Equal(at) {
			return
		}
		e.timer.Stop()
	}
	// The clock may run the function while it holds its own lock (a fake clock does): it only
	// starts a goroutine, which takes the registry's lock and sends.
	r.entries[key] = &registration{at: at, timer: r.clock.AfterFunc(max(at.Sub(r.clock.Now()), 0), func() { go r.due(key, at) })}
}

// unregister removes the Trigger's registration, if any.
func (r *registry) unregister(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.entries[key]; ok {
		e.timer.Stop()
		delete(r.entries, key)
	}
}

// due sends the Trigger to the reconciler, unless its registration changed meanwhile.
func (r *registry) due(key types.NamespacedName, at time.Time) {
	r.mu.Lock()
	e, ok := r.entries[key]
	if !ok || !e.at.Equal(at) {
		r.mu.Unlock()
		return
	}
	delete(r.entries, key)
	r.mu.Unlock()
	trigger := &platformv1.Trigger{}
	trigger.Namespace, trigger.Name = key.Namespace, key.Name
	r.events <- event.GenericEvent{Object: client.Object(trigger)}
}

// next is the registered firing of the Trigger; false when it has none.
func (r *registry) next(key types.NamespacedName) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[key]
	if !ok {
		return time.Time{}, false
	}
	return e.at, true
}

// len is the number of registrations.
func (r *registry) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}
