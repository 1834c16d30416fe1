package httpapi

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The values of path parameters and query values are checked once, here, before any handler
// reads them: a name the kube API could not hold never reaches the kube client (which refuses
// '%' and the like with an error of its own, not an API status) nor the Work store (where
// PostgreSQL refuses a NUL). A path that names what cannot exist is not found (404); a query
// value that cannot mean anything is a bad request (400).

// pathNameRules are the path parameters that name kube objects or namespaces, with the rule the
// kube API applies to them and the words a person reads when a value breaks it.
var pathNameRules = map[string]struct {
	valid func(string) bool
	rule  string
}{
	// Management objects are custom resources, whose names the kube API holds to DNS subdomains.
	"name":  {isDNSSubdomain, "names are DNS subdomains: lowercase letters, digits, '-' and '.', at most 253 characters"},
	"entry": {isDNSSubdomain, "names are DNS subdomains: lowercase letters, digits, '-' and '.', at most 253 characters"},
	// A workspace is named by its route name (a DNS label, the name of its kube namespace) or by
	// its id (lowercase hex, a DNS label as well).
	WorkspaceRouteParam: {isDNSLabel, "workspaces are named by a DNS label: lowercase letters, digits and '-', at most 63 characters"},
	WorkplaceRouteParam: {isDNSLabel, "workspaces are named by a DNS label: lowercase letters, digits and '-', at most 63 characters"},
	"namespace":         {IsResourceNamespace, "resource namespaces are default or publisher.name: lowercase letters, digits and '-', at most 127 characters"},
}

// queryNameRules are the query parameters that name kube namespaces.
var queryNameRules = map[string]struct {
	valid func(string) bool
	rule  string
}{
	"namespace": pathNameRules["namespace"],
}

// maxIDLength bounds every other path value (ids of the Work and identity stores are at most a
// few dozen characters).
const maxIDLength = 256

func isDNSSubdomain(s string) bool { return len(validation.IsDNS1123Subdomain(s)) == 0 }
func isDNSLabel(s string) bool     { return len(validation.IsDNS1123Label(s)) == 0 }

var resourceNamespacePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`)

// IsResourceNamespace reports whether s can name a resource namespace of a workspace (`default`
// or a Pack's `publisher.name`), the rule of platformv1.ResourceNamespace.
func IsResourceNamespace(s string) bool {
	return len(s) <= 127 && resourceNamespacePattern.MatchString(s)
}

// IsWorkspaceSelector reports whether s can select a workspace (a route name or an id).
func IsWorkspaceSelector(s string) bool { return isDNSLabel(s) }

// printable reports whether s is UTF-8 text without control characters: what every id and name
// of the platform is, and what both SQL dialects store.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, unicode.IsControl) < 0
}

// checkInput is the middleware that validates the operation's path parameters and query values
// before anything else reads them.
func checkInput(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		if status, msg, detail := inputError(ctx); status != 0 {
			_ = huma.WriteErr(api, ctx, status, msg, detail)
			return
		}
		next(ctx)
	}
}

// inputError is the status, message and detail of the first value of the request that breaks
// its rule; status 0 when there is none.
func inputError(ctx huma.Context) (int, string, *huma.ErrorDetail) {
	op := ctx.Operation()
	if op == nil {
		return 0, "", nil
	}
	for _, p := range op.Parameters {
		if p == nil {
			continue
		}
		switch p.In {
		case "path":
			value := ctx.Param(p.Name)
			if rule, ok := pathNameRules[p.Name]; ok {
				if !rule.valid(value) {
					return notFoundName(p.Name, rule.rule)
				}
				continue
			}
			if value == "" || len(value) > maxIDLength || !printable(value) {
				return notFoundName(p.Name, fmt.Sprintf("ids are at most %d characters of text", maxIDLength))
			}
		case "query":
			value := ctx.Query(p.Name)
			if value == "" {
				continue
			}
			if rule, ok := queryNameRules[p.Name]; ok && !rule.valid(value) {
				return badQuery(p.Name, rule.rule)
			}
			// Free text (a search) may hold anything a person types, but never what no store
			// holds: invalid UTF-8 or a NUL.
			if !utf8.ValidString(value) || strings.ContainsRune(value, 0) {
				return badQuery(p.Name, "UTF-8 text without NUL characters")
			}
		}
	}
	return 0, "", nil
}

// notFoundName: nothing has a name that breaks the rule, so the path names nothing. The value is
// not repeated: it can be anything, of any length.
func notFoundName(param, rule string) (int, string, *huma.ErrorDetail) {
	return http.StatusNotFound, fmt.Sprintf("not found: the {%s} of the path is no name anything can have", param),
		&huma.ErrorDetail{Location: "path." + param, Message: rule}
}

func badQuery(param, rule string) (int, string, *huma.ErrorDetail) {
	return http.StatusBadRequest, fmt.Sprintf("the query parameter %s is invalid", param),
		&huma.ErrorDetail{Location: "query." + param, Message: rule}
}
