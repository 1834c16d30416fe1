// Package extension is a small example extension of the platform's extension protocol
// (docs/extension-protocol.md): a weather service whose lookup-weather tool needs a Secret (the
// weather service's API key) and redeems the one-use capability the platform sends with each
// call, and a convert-temperature tool that needs none. The tests run it in process; `platform
// extension-example` serves it for the README's walkthrough.
package extension

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"platform.dev/platform/apiserver/tools/aep"
)

// WeatherKeyRole is the Secret role the example asks for.
const WeatherKeyRole = "weather-api-key"

// Options configure the example.
type Options struct {
	// Token, when it returns something, is the Bearer token every request must carry.
	Token func() string
	// RedeemDelay waits before redeeming a capability (to show a late one refused).
	RedeemDelay time.Duration
	// RedeemScope, when set, is the scope presented instead of the invocation's (to show a
	// capability refused for another scope).
	RedeemScope string
	// RedeemTwice redeems each capability a second time (to show it is single-use).
	RedeemTwice bool
}

// Redemption is one attempt to redeem a capability: the HTTP status the platform answered and
// the length of the value it returned (the value itself is never kept).
type Redemption struct {
	Status      int
	ValueLength int
	Detail      string
}

// Extension is the example's http.Handler, with what it saw.
type Extension struct {
	opts Options
	mux  *http.ServeMux

	mu             sync.Mutex
	invocations    map[string]int
	headers        []http.Header
	authorizations []string
	redemptions    []Redemption
}

// New builds the example.
func New(opts Options) *Extension {
	e := &Extension{opts: opts, mux: http.NewServeMux(), invocations: map[string]int{}}
	e.mux.HandleFunc("GET "+aep.DiscoveryPath, e.discovery)
	e.mux.HandleFunc("POST "+aep.DefaultInvokePath, e.invoke)
	return e
}

// Document is the example's discovery document.
func Document() aep.Document {
	return aep.Document{
		ProtocolVersion: aep.Version,
		Extension:       aep.Identity{Name: "weather-example", Version: "1.0.0", Description: "Deterministic weather, for trying the extension protocol"},
		Secrets:         []aep.SecretRole{{Name: WeatherKeyRole, Description: "The API key of the weather service"}},
		Tools: []aep.Tool{
			{Name: "lookup-weather", Title: "Look up the weather", Description: "Today's weather in a city.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"The city"}},"required":["city"]}`),
				Secrets:     []string{WeatherKeyRole}},
			{Name: "convert-temperature", Title: "Convert a temperature", Description: "Degrees Celsius in Fahrenheit.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"celsius":{"type":"number"}},"required":["celsius"]}`)},
		},
	}
}

func (e *Extension) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.authorizations = append(e.authorizations, r.Header.Get("Authorization"))
	e.mu.Unlock()
	if e.opts.Token != nil {
		if want := e.opts.Token(); want != "" && r.Header.Get("Authorization") != "Bearer "+want {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	e.mux.ServeHTTP(w, r)
}

func (e *Extension) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, Document())
}

func (e *Extension) invoke(w http.ResponseWriter, r *http.Request) {
	var inv aep.Invocation
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&inv); err != nil || inv.ProtocolVersion != aep.Version {
		http.Error(w, "not an invocation of protocol "+aep.Version, http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.invocations[inv.Tool+" "+inv.IdempotencyKey]++
	e.headers = append(e.headers, r.Header.Clone())
	e.mu.Unlock()
	var args struct {
		City    string   `json:"city"`
		Celsius *float64 `json:"celsius"`
	}
	if err := json.Unmarshal(inv.Arguments, &args); err != nil {
		writeJSON(w, textResult("the arguments are not what the tool takes", true))
		return
	}
	switch inv.Tool {
	case "convert-temperature":
		if args.Celsius == nil {
			writeJSON(w, textResult("celsius is required", true))
			return
		}
		writeJSON(w, textResult(fmt.Sprintf("%g °C is %g °F", *args.Celsius, *args.Celsius*9/5+32), false))
	case "lookup-weather":
		if strings.TrimSpace(args.City) == "" {
			writeJSON(w, textResult("city is required", true))
			return
		}
		capability, ok := inv.Capabilities[WeatherKeyRole]
		if !ok {
			writeJSON(w, textResult("the platform sent no capability for the weather service key", true))
			return
		}
		key, err := e.redeem(r.Context(), capability, inv.Scope)
		if err != nil {
			writeJSON(w, textResult("the weather service key could not be opened: "+err.Error(), true))
			return
		}
		writeJSON(w, textResult(Forecast(args.City)+fmt.Sprintf(" (asked the weather service with a key of %d characters)", len(key)), false))
	default:
		http.Error(w, "unknown tool", http.StatusNotFound)
	}
}

// Forecast is the deterministic weather of city.
func Forecast(city string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(strings.ToLower(strings.TrimSpace(city))))
	n := h.Sum32()
	conditions := []string{"sunny", "cloudy", "light rain", "snow", "windy"}
	return fmt.Sprintf("%s: %d °C, %s", strings.TrimSpace(city), int(n%40)-10, conditions[n/40%uint32(len(conditions))])
}

// redeem opens a capability at the platform: once, or twice when asked to show that the second
// is refused (the first value is kept).
func (e *Extension) redeem(ctx context.Context, c aep.Capability, scope string) (string, error) {
	if e.opts.RedeemDelay > 0 {
		time.Sleep(e.opts.RedeemDelay)
	}
	if e.opts.RedeemScope != "" {
		scope = e.opts.RedeemScope
	}
	value, err := e.redeemOnce(ctx, c, scope)
	if e.opts.RedeemTwice {
		_, _ = e.redeemOnce(ctx, c, scope)
	}
	return value, err
}

func (e *Extension) redeemOnce(ctx context.Context, c aep.Capability, scope string) (string, error) {
	body, _ := json.Marshal(aep.RedeemRequest{Capability: c.Token, Scope: scope})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.RedeemURL, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		e.record(Redemption{Detail: "unreachable"})
		return "", fmt.Errorf("the platform is unreachable")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var problem struct {
			Detail string `json:"detail"`
		}
		_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&problem)
		e.record(Redemption{Status: resp.StatusCode, Detail: problem.Detail})
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, problem.Detail)
	}
	var out aep.RedeemResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&out); err != nil {
		e.record(Redemption{Status: resp.StatusCode, Detail: "not JSON"})
		return "", fmt.Errorf("the platform answered something that is not a redemption")
	}
	e.record(Redemption{Status: resp.StatusCode, ValueLength: len(out.Value)})
	return out.Value, nil
}

func (e *Extension) record(r Redemption) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.redemptions = append(e.redemptions, r)
}

// Invocations counts the invocations by "<tool> <idempotency key>".
func (e *Extension) Invocations() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int, len(e.invocations))
	for k, v := range e.invocations {
		out[k] = v
	}
	return out
}

// InvocationHeaders are the headers of the invocations, in order.
func (e *Extension) InvocationHeaders() []http.Header {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]http.Header(nil), e.headers...)
}

// Redemptions are the attempts to redeem capabilities, in order.
func (e *Extension) Redemptions() []Redemption {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Redemption(nil), e.redemptions...)
}

// Authorizations are the Authorization headers of the requests, in order.
func (e *Extension) Authorizations() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.authorizations...)
}

func textResult(text string, isError bool) aep.Result {
	return aep.Result{Content: []aep.Content{{Type: "text", Text: text}}, IsError: isError}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
