package work

import (
	"encoding/json"
	"testing"
)

// A run's stored result is answered as it was stored: numbers keep their digits (decoded into
// float64 and encoded again, 12345678901234567890 came out as 12345678901234567000).
func TestARunsResultIsAnsweredAsStored(t *testing.T) {
	for name, tc := range map[string]struct{ stored, answered string }{
		"a large integer":   {`{"output":{"id":12345678901234567890}}`, `{"output":{"id":12345678901234567890}}`},
		"text and a number": {`{"message":"done","output":{"n":1.5}}`, `{"message":"done","output":{"n":1.5}}`},
		"null":              {`null`, `null`},
		"nothing stored":    {``, `null`},
		"not JSON":          {`{"output":`, `null`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := json.Marshal(decoded(json.RawMessage(tc.stored)))
			if err != nil || string(got) != tc.answered {
				t.Fatalf("answered %s (%v), want %s", got, err, tc.answered)
			}
		})
	}
}
