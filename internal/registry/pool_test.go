package registry

import (
	"testing"
	"time"
)

func TestPooledConnectionsAreRenewedAfterTheirLifetime(t *testing.T) {
	p, err := NewPool(Transport{PooledConnectionLifetime: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	first := p.transport(false)
	if p.transport(false) != first {
		t.Fatal("connections are pooled within their lifetime")
	}
	if p.transport(true) == first {
		t.Fatal("private-network registrations have their own connections (their own address guard)")
	}
	time.Sleep(60 * time.Millisecond)
	if p.transport(false) == first {
		t.Fatal("after the lifetime, new connections are dialed (and DNS asked again)")
	}
}
