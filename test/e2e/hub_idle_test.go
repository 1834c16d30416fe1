package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	. "github.com/onsi/gomega"
)

// idleHubClient opens one hub connection as the official client does (negotiate, then the
// WebSocket with the connection's token, the handshake), joins workspace and returns the socket;
// ended is called when the hub closes it.
func idleHubClient(ctx context.Context, base, token, workspace string, ended func()) (*websocket.Conn, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/hubs/workplace/negotiate?negotiateVersion=1", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	var negotiated struct {
		ConnectionToken string `json:"connectionToken"`
	}
	err = json.NewDecoder(resp.Body).Decode(&negotiated)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil {
		return nil, fmt.Errorf("negotiate: %d %v", resp.StatusCode, err)
	}
	u := "ws" + strings.TrimPrefix(base, "http") + "/hubs/workplace?id=" + url.QueryEscape(negotiated.ConnectionToken)
	ws, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		return nil, err
	}
	join := `{"protocol":"json","version":1}` + "\x1e" + `{"type":1,"invocationId":"1","target":"JoinWorkspace","arguments":["` + workspace + `"]}` + "\x1e"
	if err := ws.Write(ctx, websocket.MessageText, []byte(join)); err != nil {
		ws.CloseNow()
		return nil, err
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			ws.CloseNow()
			return nil, err
		}
		if strings.Contains(string(data), `"invocationId":"1"`) {
			if strings.Contains(string(data), `"error"`) {
				ws.CloseNow()
				return nil, fmt.Errorf("join: %s", data)
			}
			break
		}
	}
	go func() {
		for {
			if _, _, err := ws.Read(context.Background()); err != nil {
				ended()
				return
			}
		}
	}()
	return ws, nil
}

// 3,000 idle hub connections, each joined to its workspace, leave the service answering others
// within 100 ms: a liveness probe and an authenticated Workplace read.
func TestThreeThousandIdleHubConnectionsLeaveTheServiceAnsweringOthers(t *testing.T) {
	const idle = 3000
	g := NewWithT(t)
	env := append(slices.Clone(hubEnv), "Platform__Hub__MaxConnectionsPerPrincipal=5000", "Platform__Hub__RevalidateSeconds=5")
	s := startHubServer(t, filepath.Join(t.TempDir(), "data"), hubFreePort(t), env)
	t.Cleanup(func() { stopHubServer(t, s) })
	base := s.ServiceURL(t)
	admin := bootstrapAdmin(t, base)
	pat := admin.must(http.StatusCreated, http.MethodPost, "/api/identity/pat",
		`{"name":"listeners","workspace":"default","permissions":["workspaces/read","runs/read"],"expiresInDays":1}`)["token"].(string)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var (
		conns  = make([]*websocket.Conn, idle)
		next   atomic.Int64
		ended  atomic.Int64
		failed atomic.Pointer[error]
		wg     sync.WaitGroup
	)
	began := time.Now()
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= idle || failed.Load() != nil {
					return
				}
				ws, err := idleHubClient(ctx, base, pat, "default", func() { ended.Add(1) })
				if err != nil {
					err = fmt.Errorf("connection %d: %w", i, err)
					failed.Store(&err)
					return
				}
				conns[i] = ws
			}
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, ws := range conns {
			if ws != nil {
				ws.CloseNow()
			}
		}
	})
	if err := failed.Load(); err != nil {
		t.Fatal(*err)
	}
	t.Logf("%d hub connections joined in %s", idle, time.Since(began).Round(time.Millisecond))
	// Clients ping, as the official one does, so that the hub keeps them.
	pingCtx, stopPings := context.WithCancel(ctx)
	defer stopPings()
	go func() {
		for pingCtx.Err() == nil {
			for _, ws := range conns {
				_ = ws.Write(pingCtx, websocket.MessageText, []byte(`{"type":6}`+"\x1e"))
			}
			select {
			case <-pingCtx.Done():
			case <-time.After(10 * time.Second):
			}
		}
	}()

	reader := apiClient{t: t, base: base, token: pat}
	client := &http.Client{Timeout: 5 * time.Second}
	var slowest time.Duration
	for i := range 20 {
		began := time.Now()
		resp, err := client.Get(base + "/livez")
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		live := time.Since(began)

		began = time.Now()
		status, body := reader.call(http.MethodGet, "/api/workspaces/default/interactions?take=10", "")
		read := time.Since(began)
		g.Expect(status).To(Equal(http.StatusOK), "%v", body)
		if i > 0 { // the first request opens the client's connection
			slowest = max(slowest, live, read)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("slowest answer beside %d idle hub connections: %s", idle, slowest)
	g.Expect(slowest).To(BeNumerically("<", 100*time.Millisecond))
	g.Expect(ended.Load()).To(BeZero(), "the hub kept every idle connection")
}
