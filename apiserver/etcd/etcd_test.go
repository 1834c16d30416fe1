package etcd

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestStartBindsOtherPortsWhenAChosenOneWasTakenMeanwhile(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, takenPort, _ := net.SplitHostPort(taken.Addr().String())
	calls := 0
	choosePorts = func(n int) ([]string, error) {
		calls++
		ports, err := freeLoopbackPorts(n)
		if calls == 1 && err == nil {
			ports[len(ports)-1] = takenPort // the peer port, bound after the client's
		}
		return ports, err
	}
	t.Cleanup(func() { choosePorts = freeLoopbackPorts })

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, t.TempDir(), time.Minute)
	if err != nil {
		t.Fatalf("start with a port taken by another process: %v", err)
	}
	defer s.Stop()
	if calls != 2 {
		t.Errorf("ports chosen %d times, want 2 (once more after the taken one)", calls)
	}
}
