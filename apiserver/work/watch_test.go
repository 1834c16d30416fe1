package work

import (
	"testing"
	"time"
)

func TestAWaiterIsWokenByTheNextChangeOfItsRunOnly(t *testing.T) {
	s := &Store{}
	mine, stopMine := s.Changed("run-1")
	defer stopMine()
	other, stopOther := s.Changed("run-2")
	defer stopOther()

	s.notify("run-1")
	select {
	case <-mine:
	case <-time.After(time.Second):
		t.Fatal("the waiter of run-1 was not woken by its change")
	}
	select {
	case <-other:
		t.Fatal("the waiter of run-2 was woken by a change of run-1")
	default:
	}

	stopOther()
	s.notify("run-2") // nobody waits any more: nothing to close twice
	if len(s.watchers.waiters) != 0 {
		t.Fatalf("stopped waiters are kept: %v", s.watchers.waiters)
	}
}
