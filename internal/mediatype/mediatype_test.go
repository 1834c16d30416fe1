package mediatype

import (
	"strings"
	"testing"
)

func TestOnlyATypeSlashSubtypeWithoutControlCharactersIsAMediaType(t *testing.T) {
	cases := map[string]struct {
		in   string
		want bool
	}{
		"a type and a subtype":                {"text/csv", true},
		"with parameters":                     {"text/plain; charset=utf-8", true},
		"a structured suffix":                 {"application/vnd.api+json", true},
		"empty":                               {"", false},
		"a bare word":                         {"garbage", false},
		"no subtype":                          {"text/", false},
		"no type":                             {"/csv", false},
		"two slashes":                         {"text/csv/x", false},
		"a header injected after the subtype": {"text/csv\r\nX-Injected: 1", false},
		"CR LF as white space between parameters":     {"text/csv;\r\n charset=utf-8", false},
		"a line feed alone":                           {"text/csv\n", false},
		"a NUL":                                       {"text/csv\x00", false},
		"a tab":                                       {"text/csv;\tcharset=utf-8", false},
		"a non-ASCII character":                       {"text/çsv", false},
		"longer than the bound":                       {"application/" + strings.Repeat("a", MaxLength), false},
		"a parameter without a value":                 {"text/csv; charset", false},
		"at the bound, all of it a valid media type":  {"application/x-" + strings.Repeat("a", MaxLength-len("application/x-")), true},
		"one past the bound, all of it a valid media": {"application/x-" + strings.Repeat("a", MaxLength-len("application/x-")+1), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Valid(tc.in); got != tc.want {
				t.Errorf("Valid(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}
