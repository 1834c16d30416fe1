package work

import (
	"context"
	"sync"
	"time"
)

// runWatchers wakes the requests that wait in this process for a run to change, so that they
// need not poll the store; waiters still poll slowly for changes that other replicas commit.
type runWatchers struct {
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
}

// Changed returns a channel that is closed at the next change of the run that this process
// commits, and a function that stops watching. Register before reading the run, so that a change
// between the read and the wait is not missed.
func (s *Store) Changed(runID string) (<-chan struct{}, func()) {
	w := &s.watchers
	ch := make(chan struct{})
	w.mu.Lock()
	if w.waiters == nil {
		w.waiters = map[string]map[chan struct{}]struct{}{}
	}
	if w.waiters[runID] == nil {
		w.waiters[runID] = map[chan struct{}]struct{}{}
	}
	w.waiters[runID][ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if set, ok := w.waiters[runID]; ok {
			delete(set, ch)
			if len(set) == 0 {
				delete(w.waiters, runID)
			}
		}
	}
}

// notify wakes the waiters of a run after a change of it committed.
func (s *Store) notify(runID string) {
	w := &s.watchers
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.waiters[runID] {
		close(ch)
	}
	delete(w.waiters, runID)
}

// WaitSettled waits up to timeout for a Pending or Running run to ask, end or pause, and returns
// it as it then is.
func (s *Store) WaitSettled(ctx context.Context, workspaceID string, run FlowRun, timeout time.Duration) (FlowRun, error) {
	deadline := time.Now().Add(timeout)
	for run.State == StatePending || run.State == StateRunning {
		if !time.Now().Before(deadline) {
			return run, nil
		}
		select {
		case <-ctx.Done():
			return run, nil
		case <-time.After(20 * time.Millisecond):
		}
		next, err := s.Run(ctx, workspaceID, run.ID)
		if err != nil {
			return run, err
		}
		run = next
	}
	return run, nil
}
