package tools_test

import (
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"platform.dev/platform/apiserver/tools"
)

var (
	// mcpToolName is the rule discovery applies to the names a provider lists.
	mcpToolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	// openAIFunctionName is what OpenAI-compatible endpoints accept as a function name.
	openAIFunctionName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// Tool names come from the provider: whatever it lists, a Tool's object name is a valid kube
// name and its function name one a model accepts.
func FuzzToolNamesBecomeValidObjectAndFunctionNames(f *testing.F) {
	for _, tool := range []string{"search", "Search", "web.search", "a..b", "-x-", "_", strings.Repeat("Z", 128)} {
		f.Add("kb", tool)
		f.Add(strings.Repeat("p", 200)+".v1", tool)
	}
	f.Fuzz(func(t *testing.T, provider, tool string) {
		if len(validation.IsDNS1123Subdomain(provider)) > 0 || !mcpToolName.MatchString(tool) {
			t.Skip()
		}
		name := tools.ObjectName(provider, tool)
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Fatalf("ObjectName(%q, %q) = %q: %v", provider, tool, name, errs)
		}
		if fn := tools.FunctionName(name); !openAIFunctionName.MatchString(fn) {
			t.Fatalf("FunctionName(%q) = %q", name, fn)
		}
	})
}
