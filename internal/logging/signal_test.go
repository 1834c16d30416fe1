package logging

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A stop on a signal is marked before anything sees the context end: a controller whose informers
// were still syncing reports the cancelled sync the moment its context ends, and that report must
// already be known for the stop it is (a race that printed errors after Ctrl-C of `make run`).
func TestAStopOnASignalIsMarkedBeforeTheContextEnds(t *testing.T) {
	stopping.Store(false)
	t.Cleanup(func() { stopping.Store(false) })
	ctx, stop := SignalContext(context.Background(), syscall.SIGUSR1)
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the signal did not end the context")
	}
	if !stopping.Load() {
		t.Fatal("the context ended before the stop was marked")
	}
}

// Without a signal, the context ends with its parent or stop, and no stop is marked.
func TestASignalContextWithoutASignalMarksNoStop(t *testing.T) {
	stopping.Store(false)
	parent, cancel := context.WithCancel(context.Background())
	ctx, stop := SignalContext(parent, syscall.SIGUSR1)
	cancel()
	<-ctx.Done()
	stop()
	if stopping.Load() {
		t.Fatal("a stop was marked without a signal")
	}
}

func TestAnInformerCancelledByTheStopIsNoErrorButOtherErrorsAre(t *testing.T) {
	stopping.Store(false)
	t.Cleanup(func() { stopping.Store(false) })
	var out bytes.Buffer
	log := Logger(Info, &out)
	Stopping()
	log.Error(errors.New("Timeout: failed waiting for *v1.Entry Informer to sync"), "failed to get informer from cache")
	if out.Len() != 0 {
		t.Fatalf("a stop's cancelled informer sync was written as an error: %s", out.String())
	}
	log.Error(errors.New("boom"), "reconcile failed")
	if !strings.Contains(out.String(), "reconcile failed") {
		t.Fatalf("another error during the stop was not written: %q", out.String())
	}
}
