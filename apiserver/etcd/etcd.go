// Package etcd runs the embedded etcd member that stores every kube object of a single-machine
// installation. It starts before the API server and stops after it.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"platform.dev/platform/internal/logging"
)

// Server is a running embedded etcd member.
type Server struct {
	etcd      *embed.Etcd
	clientURL string
	stopping  *atomic.Bool
}

// Start runs a single-member etcd cluster with its data in dir, listening on loopback only.
// It returns once the member serves requests, or with the reason it cannot.
func Start(ctx context.Context, dir string, readyTimeout time.Duration) (*Server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create etcd data directory: %w", err)
	}
	if err := checkWritable(dir); err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "platform"
	cfg.Dir = dir
	// A single member has no peers to wait for: short ticks make it leader in tens of
	// milliseconds instead of up to a second, which is most of the platform's start time.
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	// etcd's authentication is never enabled (loopback only, one client: the apiserver), so no
	// token provider: the default one warns at every start that its tokens are unsigned.
	cfg.AuthToken = ""
	// etcd logs at the process's level (warn by default: its info logs would drown the platform's
	// own) until Stop, after which it reports its closed listeners as errors.
	stopping := &atomic.Bool{}
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.Lock(os.Stderr),
		zap.LevelEnablerFunc(func(l zapcore.Level) bool { return l >= logging.Current().Zap() && !stopping.Load() }))
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(benignFirstStartErrors{core}))

	if err := checkDatabase(filepath.Join(dir, "member", "snap", "db")); err != nil {
		return nil, err
	}
	var (
		e         *embed.Etcd
		clientURL url.URL
	)
	// The ports are free when chosen but another process may take one before etcd binds it:
	// then it starts again on others.
	for attempt := 1; ; attempt++ {
		ports, err := choosePorts(2)
		if err != nil {
			return nil, err
		}
		clientURL = url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", ports[0])}
		peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", ports[1])}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
		if e, err = startRecovering(cfg); err == nil {
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) || attempt == 5 {
			return nil, fmt.Errorf("start embedded etcd in %s: %w", dir, err)
		}
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd failed: %w", err)
	case <-time.After(readyTimeout):
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s not ready after %s (is its data readable?)", dir, readyTimeout)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	return &Server{etcd: e, clientURL: clientURL.String(), stopping: stopping}, nil
}

// checkDatabase opens an existing etcd database read-only before etcd does: etcd opens it on a
// goroutine of its own and panics there on corrupt data, which no recover of ours can catch.
func checkDatabase(path string) (err error) {
	if _, statErr := os.Stat(path); errors.Is(statErr, os.ErrNotExist) {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unreadable etcd data in %s: %v", path, r)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if errors.Is(err, bolt.ErrTimeout) {
		return fmt.Errorf("etcd data in %s is in use by another process (is another platform serve running on this data directory?)", path)
	}
	if err != nil {
		return fmt.Errorf("unreadable etcd data in %s: %w", path, err)
	}
	return db.Close()
}

// startRecovering turns a panic of etcd on corrupt data into an error, so that startup fails
// with one clear line instead of a stack trace.
func startRecovering(cfg *embed.Config) (e *embed.Etcd, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unreadable etcd data (%v)", r)
		}
	}()
	return embed.StartEtcd(cfg)
}

// ClientURL is the address the API server's storage connects to.
func (s *Server) ClientURL() string { return s.clientURL }

// Stop closes the member after in-flight requests; acknowledged writes are already fsynced.
func (s *Server) Stop() {
	s.stopping.Store(true)
	s.etcd.Close()
}

func checkWritable(dir string) error {
	probe := filepath.Join(dir, ".write-probe")
	if err := os.WriteFile(probe, nil, 0o600); err != nil {
		return fmt.Errorf("data directory %s is not writable: %w", dir, errors.Unwrap(err))
	}
	return os.Remove(probe)
}

// choosePorts is freeLoopbackPorts, replaced by a test that hands out a taken port.
var choosePorts = freeLoopbackPorts

// freeLoopbackPorts asks the kernel for unused ports; etcd needs them named up front.
func freeLoopbackPorts(n int) ([]string, error) {
	var ports []string
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port for etcd: %w", err)
		}
		listeners = append(listeners, l)
		_, port, _ := net.SplitHostPort(l.Addr().String())
		ports = append(ports, port)
	}
	return ports, nil
}

// expectedMessages are what etcd logs as warnings or errors on every start of this embedded
// member, with nothing for a user to do:
var expectedMessages = map[string]bool{
	// A new member's storage-version monitor runs before the first raft term is applied (more
	// likely with the short ticks above); it retries and succeeds a moment later.
	"failed to update storage version": true,
	"Failed to detect schema version":  true,
	// The member listens on loopback only, for this process: one port serves both protocols.
	"Running http and grpc server on single port. This is not recommended for production.": true,
}

// benignFirstStartErrors drops expectedMessages.
type benignFirstStartErrors struct{ zapcore.Core }

func (c benignFirstStartErrors) Check(entry zapcore.Entry, checked *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if expectedMessages[entry.Message] {
		return checked
	}
	return c.Core.Check(entry, checked)
}

func (c benignFirstStartErrors) With(fields []zapcore.Field) zapcore.Core {
	return benignFirstStartErrors{c.Core.With(fields)}
}
