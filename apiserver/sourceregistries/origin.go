package sourceregistries

import (
	"net"
	"net/url"
	"strings"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/config"
)

// Origin classifications (spec rule 8a).
const (
	OriginOfficial = "official"
	OriginExternal = "external"
	OriginPrivate  = "private"
	OriginInternal = "internal"
)

// Reason codes of an origin classification.
const (
	ReasonBuiltInRegistration   = "builtInRegistration"
	ReasonPrivateAddress        = "privateAddress"
	ReasonPrivateName           = "privateName"
	ReasonPrivateNetworkAllowed = "privateNetworkAllowed"
	ReasonPublicHost            = "publicHost"
	ReasonPlainHTTP             = "plainHttp"
)

// ClassifyOrigin is the origin of a registration, computed from what it says now (never cached):
// official only for the built-in registration at the configured official index; private for a
// private, loopback or CGNAT address or a name that is not public (localhost, one label,
// .local, .internal, .lan, .home.arpa); internal for another host a registration opts into
// private networks for (it may resolve privately); external otherwise.
func ClassifyOrigin(reg *platformv1.SourceRegistry, cfg *config.Config) (string, []string) {
	var reasons []string
	u, err := url.Parse(reg.Definition.IndexURL)
	if err != nil {
		return OriginExternal, nil
	}
	if u.Scheme == "http" {
		reasons = append(reasons, ReasonPlainHTTP)
	}
	if reg.Name == OfficialName && reg.Definition.IndexURL == cfg.GetOr(OfficialIndexURLSetting, DefaultOfficialIndexURL) {
		return OriginOfficial, append(reasons, ReasonBuiltInRegistration)
	}
	host := strings.ToLower(u.Hostname())
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsPrivate() || ip.IsLoopback() || cgnat.Contains(ip) || ip.IsUnspecified() {
			return OriginPrivate, append(reasons, ReasonPrivateAddress)
		}
	} else if host == "localhost" || !strings.Contains(host, ".") || hasAnySuffix(host, ".localhost", ".local", ".internal", ".lan", ".home.arpa") {
		return OriginPrivate, append(reasons, ReasonPrivateName)
	}
	if p := reg.Definition.EndpointPolicy; p != nil && p.AllowPrivateNetwork {
		return OriginInternal, append(reasons, ReasonPrivateNetworkAllowed)
	}
	return OriginExternal, append(reasons, ReasonPublicHost)
}

var cgnat = &net.IPNet{IP: net.IPv4(100, 64, 0, 0), Mask: net.CIDRMask(10, 32)}

func hasAnySuffix(s string, suffixes ...string) bool {
	for _, suffix := range suffixes {
		if strings.HasSuffix(s, suffix) {
			return true
		}
	}
	return false
}
