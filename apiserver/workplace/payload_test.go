package workplace

import (
	"encoding/json"
	"testing"
	"time"

	"platform.dev/platform/apiserver/work"
)

// An event's payload is written byte for byte as json.Marshal writes it, whatever it holds: the
// hub and the kube API's watches read the outbox's payloads, and a client compares them.
func TestAnEventPayloadIsWrittenAsJSONMarshalWritesIt(t *testing.T) {
	for name, payload := range map[string]map[string]any{
		"empty":                        {},
		"ids, states and versions":     {"taskId": "t-1", "state": work.StateCompleted, "version": int64(7), "created": true, "seq": 3},
		"a named string type":          {"kind": namedState("Waiting")},
		"a nil and a false":            {"interactionId": nil, "attention": false, "n": int32(-2)},
		"keys sorted as json sorts":    {"b": 1, "a": 2, "B": 3, "a_": 4, "ab": 5},
		"a string json escapes":        {"label": `say "hi" \ there`},
		"HTML json escapes":            {"title": "<b>&</b>"},
		"a control character":          {"text": "line\nbreak\t"},
		"non-ASCII":                    {"title": "Überweisung ✓ \u2028"},
		"invalid UTF-8":                {"title": "a\xffb"},
		"a key json escapes":           {"<key>": "v"},
		"a time marshals itself":       {"at": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		"a raw message":                {"data": json.RawMessage(`{"x":1}`)},
		"a float":                      {"ratio": 0.5},
		"a nested object":              {"deliverables": map[string]any{"z": 1, "a": []string{"x"}}},
		"more keys than the fast path": {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9, "j": 10, "k": 11, "l": 12, "m": 13, "n": 14},
	} {
		t.Run(name, func(t *testing.T) {
			want, wantErr := json.Marshal(payload)
			got, err := payloadJSON(payload)
			if (err != nil) != (wantErr != nil) || string(got) != string(want) {
				t.Fatalf("payloadJSON = %s, %v; json.Marshal = %s, %v", got, err, want, wantErr)
			}
		})
	}
}

type namedState string

// Encoding an event's usual payload makes one allocation, its bytes.
func TestAnEventPayloadIsEncodedInOneAllocation(t *testing.T) {
	payload := map[string]any{"flowRunId": "r-1", "workItemId": "w-1", "taskId": "t-1", "state": work.StateCompleted, "version": int64(4)}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = payloadJSON(payload) }); allocs > 1 {
		t.Fatalf("%.0f allocations", allocs)
	}
}
