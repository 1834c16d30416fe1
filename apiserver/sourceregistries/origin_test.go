package sourceregistries

import (
	"testing"

	. "github.com/onsi/gomega"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/internal/config"
)

func TestOriginIsOfficialOnlyForTheBuiltInRegistrationAtTheOfficialIndex(t *testing.T) {
	cfg := config.FromMap(config.Production, nil)
	for name, tc := range map[string]struct {
		name, url    string
		allowPrivate bool
		want         string
	}{
		"the built-in registration":                 {OfficialName, DefaultOfficialIndexURL, false, OriginOfficial},
		"the built-in name pointed at a mirror":     {OfficialName, "https://mirror.example/index.json", false, OriginExternal},
		"another name at the official index":        {"copy", DefaultOfficialIndexURL, false, OriginExternal},
		"a loopback address":                        {"dev", "https://127.0.0.1:5243/index.json", true, OriginPrivate},
		"a private address":                         {"lab", "https://10.1.2.3/index.json", true, OriginPrivate},
		"a one-label name":                          {"corp", "https://registry/index.json", true, OriginPrivate},
		"a .internal name":                          {"corp2", "https://registry.corp.internal/index.json", false, OriginPrivate},
		"a public name opted into private networks": {"split", "https://registry.example/index.json", true, OriginInternal},
		"a public name":                             {"public", "https://registry.example/index.json", false, OriginExternal},
	} {
		t.Run(name, func(t *testing.T) {
			reg := &platformv1.SourceRegistry{Definition: platformv1.SourceRegistryDefinition{IndexURL: tc.url, EndpointPolicy: &platformv1.EndpointPolicy{AllowPrivateNetwork: tc.allowPrivate}}}
			reg.Name = tc.name
			got, reasons := ClassifyOrigin(reg, cfg)
			g := NewWithT(t)
			g.Expect(got).To(Equal(tc.want))
			g.Expect(reasons).NotTo(BeEmpty())
		})
	}
}
