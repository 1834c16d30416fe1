package workplace

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lockedBuffer is what the command prints, read while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The Workplace's ready line promises a Workplace that works: it comes only once the API it
// relays to answers /readyz, not when the host alone listens.
func TestTheReadyLineWaitsForTheAPIToAnswer(t *testing.T) {
	var apiReady atomic.Bool
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || !apiReady.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	}))
	defer api.Close()

	cmd := NewCommand()
	out, errOut := &lockedBuffer{}, &lockedBuffer{}
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SetArgs([]string{"--addr", "127.0.0.1:0", "--api-base-url", api.URL + "/"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	// Several probes of the host and the API, answered 503 by the API.
	time.Sleep(time.Second)
	if got := out.String(); got != "" {
		t.Fatalf("printed while the API answers 503:\n%s", got)
	}
	apiReady.Store(true)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "Workplace ready at http://127.0.0.1:") {
		if time.Now().After(deadline) {
			t.Fatalf("no ready line 10 s after the API answered; stdout %q, stderr %q", out.String(), errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "(API "+api.URL+"/, hub "+api.URL+"/hubs/workplace, session authentication)\n") {
		t.Fatalf("ready line: %q", out.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("the command ended with %v", err)
	}
	if errOut.String() != "" {
		t.Fatalf("stderr: %q", errOut.String())
	}
}
