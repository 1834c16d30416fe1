package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// recordSeparator ends every message of the SignalR JSON protocol.
const recordSeparator = 0x1e

// hubEvent is one event a hub client received.
type hubEvent struct {
	Target string
	Arg    map[string]any
}

// hubClient is a minimal SignalR JSON client of /hubs/workplace: negotiate, upgrade, handshake,
// JoinWorkspace, then it records every event until its connection ends (done closes).
type hubClient struct {
	conn *websocket.Conn
	done chan struct{}

	mu     sync.Mutex
	events []hubEvent
	joined chan error
}

func dialHub(ctx context.Context, base, cookie, workspace string) (*hubClient, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/hubs/workplace/negotiate?negotiateVersion=1", nil)
	req.Header.Set("Cookie", cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	var neg struct {
		ConnectionToken string `json:"connectionToken"`
	}
	err = json.NewDecoder(resp.Body).Decode(&neg)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("negotiate: %d %v", resp.StatusCode, err)
	}
	wsURL := "ws" + strings.TrimPrefix(base, "http") + "/hubs/workplace?id=" + neg.ConnectionToken
	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Cookie": []string{cookie}}})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(1 << 20)
	c := &hubClient{conn: conn, done: make(chan struct{}), joined: make(chan error, 1)}
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"protocol":"json","version":1}`+"\x1e")); err != nil {
		conn.CloseNow()
		return nil, err
	}
	go c.read()
	go c.ping()
	join := fmt.Sprintf(`{"type":1,"invocationId":"join","target":"JoinWorkspace","arguments":[%q]}`+"\x1e", workspace)
	if err := conn.Write(ctx, websocket.MessageText, []byte(join)); err != nil {
		conn.CloseNow()
		return nil, err
	}
	select {
	case err := <-c.joined:
		if err != nil {
			conn.CloseNow()
			return nil, err
		}
	case <-c.done:
		return nil, fmt.Errorf("the hub closed the connection before JoinWorkspace completed")
	case <-ctx.Done():
		conn.CloseNow()
		return nil, ctx.Err()
	}
	return c, nil
}

func (c *hubClient) read() {
	defer close(c.done)
	for {
		_, data, err := c.conn.Read(context.Background())
		if err != nil {
			return
		}
		for _, frame := range bytes.Split(data, []byte{recordSeparator}) {
			if len(frame) == 0 {
				continue
			}
			var m struct {
				Type         int              `json:"type"`
				InvocationID string           `json:"invocationId"`
				Target       string           `json:"target"`
				Arguments    []map[string]any `json:"arguments"`
				Error        string           `json:"error"`
			}
			if json.Unmarshal(frame, &m) != nil {
				continue
			}
			switch {
			case m.Type == 3 && m.InvocationID == "join":
				var err error
				if m.Error != "" {
					err = fmt.Errorf("JoinWorkspace: %s", m.Error)
				}
				c.joined <- err
			case m.Type == 1 && len(m.Arguments) == 1:
				c.mu.Lock()
				c.events = append(c.events, hubEvent{Target: m.Target, Arg: m.Arguments[0]})
				c.mu.Unlock()
			}
		}
	}
}

// ping keeps the connection alive: the hub drops a client silent for 30 s.
func (c *hubClient) ping() {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = c.conn.Write(ctx, websocket.MessageText, []byte(`{"type":6}`+"\x1e"))
			cancel()
		}
	}
}

// completedTasks are the Tasks a TaskStatusChanged event said completed.
func (c *hubClient) completedTasks() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]bool{}
	for _, e := range c.events {
		if id, _ := e.Arg["taskId"].(string); e.Target == "TaskStatusChanged" && e.Arg["state"] == "completed" {
			out[id] = true
		}
	}
	return out
}

func (c *hubClient) close() { c.conn.CloseNow() }
