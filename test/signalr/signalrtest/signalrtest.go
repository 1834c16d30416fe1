// Package signalrtest runs the official SignalR client (@microsoft/signalr, from test/signalr)
// under the machine's Node.js for tests: the real peer of the real-time hub.
//
// The client needs `npm ci` in test/signalr (.ci/run does it); without node or without the
// installed package the tests that need it are skipped (and fail under CI).
package signalrtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options configure one client.
type Options struct {
	// URL is the hub's URL (http://host:port/hubs/workplace).
	URL string
	// Token is a bearer token (a PAT or a JWT), given as the client's accessTokenFactory.
	Token string
	// Cookie and Origin are sent as those headers, as a browser sends them.
	Cookie, Origin string
	// SkipNegotiation connects the WebSocket at once, without negotiate.
	SkipNegotiation bool `json:"skipNegotiation,omitempty"`
	// ReconnectEvery turns automatic reconnection on, retrying at that interval.
	ReconnectEvery time.Duration
}

// Message is one line the client printed: type is started, start-failed, event (name, payload),
// result (id, ok, error), reconnecting, reconnected or closed.
type Message map[string]any

// Type is the message's type.
func (m Message) Type() string { s, _ := m["type"].(string); return s }

// Name is an event's name.
func (m Message) Name() string { s, _ := m["name"].(string); return s }

// Payload is an event's argument.
func (m Message) Payload() map[string]any { p, _ := m["payload"].(map[string]any); return p }

// Client is a running client.
type Client struct {
	t     testing.TB
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu       sync.Mutex
	messages []Message
	changed  chan struct{}
	exited   chan struct{}
	nextID   int
}

func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// Available skips the test when node or the client's npm package is missing; under CI (CI set),
// where .ci/run installs both, it fails instead, so that the hub's tests never pass unrun.
func Available(t testing.TB) {
	t.Helper()
	skip := t.Skip
	if os.Getenv("CI") != "" {
		skip = t.Fatal
	}
	if _, err := exec.LookPath("node"); err != nil {
		skip("SignalR client tests skipped: node is not on PATH (install Node.js, then run `npm ci` in test/signalr)")
		return
	}
	if _, err := os.Stat(filepath.Join(dir(), "node_modules", "@microsoft", "signalr", "package.json")); err != nil {
		skip("SignalR client tests skipped: test/signalr/node_modules is missing (run `npm ci` in test/signalr)")
	}
}

// Start runs a client until the test ends.
func Start(t testing.TB, opts Options) *Client {
	t.Helper()
	Available(t)
	args, _ := json.Marshal(map[string]any{"url": opts.URL, "token": opts.Token, "cookie": opts.Cookie, "origin": opts.Origin,
		"skipNegotiation": opts.SkipNegotiation, "reconnectMs": opts.ReconnectEvery.Milliseconds()})
	cmd := exec.Command("node", "harness.mjs", string(args))
	cmd.Dir = dir()
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Client{t: t, cmd: cmd, stdin: stdin, changed: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		scanner := bufio.NewScanner(stdout)
		scanner.Buffer(make([]byte, 64<<10), 4<<20)
		for scanner.Scan() {
			var m Message
			if json.Unmarshal(scanner.Bytes(), &m) != nil {
				continue
			}
			c.mu.Lock()
			c.messages = append(c.messages, m)
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
		}
		_ = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.exited
	})
	return c
}

// Mark is the number of messages so far: WaitAfter looks only at later ones.
func (c *Client) Mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.messages)
}

// WaitAfter returns the first message after mark that match accepts, failing the test after
// timeout.
func (c *Client) WaitAfter(mark int, timeout time.Duration, what string, match func(Message) bool) Message {
	c.t.Helper()
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		for _, m := range c.messages[min(mark, len(c.messages)):] {
			if match(m) {
				c.mu.Unlock()
				return m
			}
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			c.t.Fatalf("the SignalR client saw no %s within %s; it saw:\n%s", what, timeout, c.dump())
			return nil
		}
	}
}

// Wait is WaitAfter from the first message.
func (c *Client) Wait(timeout time.Duration, what string, match func(Message) bool) Message {
	c.t.Helper()
	return c.WaitAfter(0, timeout, what, match)
}

// OfType matches the messages of a type.
func OfType(typ string) func(Message) bool { return func(m Message) bool { return m.Type() == typ } }

// Event matches the events of a name.
func Event(name string) func(Message) bool {
	return func(m Message) bool { return m.Type() == "event" && m.Name() == name }
}

// Started waits for the connection to start and fails the test when it could not.
func (c *Client) Started() {
	c.t.Helper()
	m := c.Wait(60*time.Second, "start", func(m Message) bool { return m.Type() == "started" || m.Type() == "start-failed" })
	if m.Type() != "started" {
		c.t.Fatalf("the SignalR client could not start: %v", m["error"])
	}
}

// StartFailure waits for the connection to fail to start and returns the client's error.
func (c *Client) StartFailure() string {
	c.t.Helper()
	m := c.Wait(60*time.Second, "start or start failure", func(m Message) bool { return m.Type() == "started" || m.Type() == "start-failed" })
	if m.Type() != "start-failed" {
		c.t.Fatalf("the SignalR client started")
	}
	s, _ := m["error"].(string)
	return s
}

// Invoke calls a hub method and returns the error the hub answered, "" when it succeeded.
func (c *Client) Invoke(method string, args ...any) string {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	line, _ := json.Marshal(map[string]any{"op": "invoke", "id": id, "method": method, "args": args})
	if _, err := fmt.Fprintf(c.stdin, "%s\n", line); err != nil {
		c.t.Fatalf("invoke %s: %v", method, err)
	}
	m := c.Wait(60*time.Second, "result of "+method, func(m Message) bool {
		got, _ := m["id"].(float64)
		return m.Type() == "result" && int(got) == id
	})
	if ok, _ := m["ok"].(bool); ok {
		return ""
	}
	s, _ := m["error"].(string)
	if s == "" {
		s = "failed"
	}
	return s
}

// Stop stops the connection and waits for the client to exit.
func (c *Client) Stop() {
	_, _ = io.WriteString(c.stdin, `{"op":"stop"}`+"\n")
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
	}
}

func (c *Client) dump() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, m := range c.messages {
		line, _ := json.Marshal(m)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}
