package netguard

import (
	"errors"
	"net"
	"testing"
)

func TestPolicyRefusesWhatItDoesNotAllow(t *testing.T) {
	cases := map[string]struct {
		ip      string
		policy  Policy
		allowed bool
	}{
		"a public address is allowed":                          {"93.184.216.34", Policy{}, true},
		"a private address is refused by default":              {"10.1.2.3", Policy{}, false},
		"a private address is allowed when the policy does":    {"192.168.1.1", Policy{AllowPrivate: true}, true},
		"shared address space counts as private":               {"100.64.1.1", Policy{}, false},
		"a unique local address counts as private":             {"fd00::1", Policy{}, false},
		"loopback is refused by default":                       {"127.0.0.1", Policy{}, false},
		"loopback is allowed when the policy does":             {"::1", Policy{AllowLoopback: true}, true},
		"link-local is always refused":                         {"169.254.169.254", Policy{AllowPrivate: true, AllowLoopback: true}, false},
		"IPv6 link-local is always refused":                    {"fe80::1", Policy{AllowPrivate: true, AllowLoopback: true}, false},
		"multicast is always refused":                          {"224.0.0.1", Policy{AllowPrivate: true, AllowLoopback: true}, false},
		"the unspecified address is always refused":            {"0.0.0.0", Policy{AllowPrivate: true, AllowLoopback: true}, false},
		"an IPv4-mapped link-local address is still refused":   {"::ffff:169.254.169.254", Policy{AllowPrivate: true, AllowLoopback: true}, false},
		"an IPv4-mapped private address is refused by default": {"::ffff:10.0.0.1", Policy{}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.policy.Control("tcp", net.JoinHostPort(tc.ip, "443"), nil)
			if tc.allowed != (err == nil) {
				t.Fatalf("Control(%s) = %v, want allowed=%v", tc.ip, err, tc.allowed)
			}
			var gerr *Error
			if err != nil && !errors.As(err, &gerr) {
				t.Fatalf("error %v is not a *netguard.Error", err)
			}
		})
	}
}
