// Package netguard is the project's one guard on outbound addresses: it classifies the address a
// connection is about to dial (after DNS resolution, so a name that resolves to a forbidden
// address is refused however it was spelled, and DNS rebinding cannot reach one) and refuses
// what a policy does not allow. Link-local (cloud metadata endpoints among them), multicast and
// unspecified addresses are always refused.
package netguard

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// Policy says which non-public addresses a caller may reach.
type Policy struct {
	// AllowPrivate allows private networks (RFC 1918, unique local, shared address space).
	AllowPrivate bool
	// AllowLoopback allows loopback addresses.
	AllowLoopback bool
	// Setting names the setting that relaxes the policy, for the error ("" for none).
	Setting string
	// Who names what is being reached, for the error ("registries"); "outbound requests" when empty.
	Who string
}

// Class is what kind of address an IP is.
type Class string

const (
	Public      Class = "public"
	Private     Class = "private"
	Loopback    Class = "loopback"
	LinkLocal   Class = "link-local"
	Multicast   Class = "multicast"
	Unspecified Class = "unspecified"
)

var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")

// Classify returns the class of ip; an IPv4-mapped IPv6 address is classified as its IPv4 one.
func Classify(ip net.IP) Class {
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return Unspecified
	}
	addr = addr.Unmap()
	switch {
	case addr.IsUnspecified():
		return Unspecified
	case addr.IsLinkLocalUnicast():
		return LinkLocal
	case addr.IsMulticast() || addr.IsLinkLocalMulticast() || addr.IsInterfaceLocalMulticast():
		return Multicast
	case addr.IsLoopback():
		return Loopback
	case addr.IsPrivate() || (addr.Is4() && sharedAddressSpace.Contains(addr)):
		return Private
	}
	return Public
}

// Error is a refused address. Its message names the class and the setting that relaxes the
// policy; the dialer's own error around it names the address.
type Error struct {
	Address string
	Class   Class
	Setting string
	Who     string
}

func (e *Error) Error() string {
	who := e.Who
	if who == "" {
		who = "outbound requests"
	}
	if e.Setting != "" && (e.Class == Private || e.Class == Loopback) {
		return fmt.Sprintf("%s may not be reached at %s addresses (%s)", who, e.Class, e.Setting)
	}
	return fmt.Sprintf("%s may not be reached at %s addresses", who, e.Class)
}

// CheckIP refuses ip unless p allows its class.
func (p Policy) CheckIP(ip net.IP) error {
	c := Classify(ip)
	switch {
	case c == Public,
		c == Private && p.AllowPrivate,
		c == Loopback && p.AllowLoopback:
		return nil
	}
	return &Error{Address: ip.String(), Class: c, Setting: p.Setting, Who: p.Who}
}

// Control is a net.Dialer Control function enforcing p on the dialed host:port.
func (p Policy) Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return &Error{Address: host, Class: Unspecified, Setting: p.Setting, Who: p.Who}
	}
	return p.CheckIP(ip)
}
