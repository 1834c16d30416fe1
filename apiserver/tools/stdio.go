package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
)

// inheritedEnvironment are the only variables of the platform's own environment that a STDIO
// provider process sees, so that it finds its interpreter and a home; the rest (model API keys,
// the database URL, Secrets) never reaches it. The definition's env adds to these.
var inheritedEnvironment = []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT"}

// stopGrace is how long a STDIO process has to exit after its stdin closed before it is killed.
const stopGrace = 2 * time.Second

// stdioTransport starts p's command and speaks MCP over its stdin and stdout. Its stderr is
// drained and discarded (it may echo its environment); a line of stdout over MaxMessageBytes
// sets oversized and ends the session. stop ends the process: stdin closes, then, after a
// grace period, its process group is killed.
func (m *Manager) stdioTransport(ctx context.Context, p *platformv1.ToolProvider, faults *peerFaults) (mcp.Transport, func(), error) {
	def := p.Definition.Stdio
	if def == nil || def.Command == "" {
		return nil, nil, &ConfigurationError{Provider: p.Name, Reason: "definition.stdio.command is not set"}
	}
	if !slices.Contains(m.opts.AllowedCommands, def.Command) {
		return nil, nil, &ConfigurationError{Provider: p.Name, Reason: fmt.Sprintf(
			"the command %q is not one the instance allows (Platform:Tools:AllowedCommands)", def.Command)}
	}
	env := make([]string, 0, len(inheritedEnvironment)+len(def.Env))
	for _, name := range inheritedEnvironment {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	for i, v := range def.Env {
		value := v.Value
		if v.Secret != nil {
			path := field.NewPath("definition", "stdio", "env").Index(i).Child("secret").String()
			var err error
			if value, err = m.opts.Secrets(ctx, p.Namespace, path, *v.Secret); err != nil {
				return nil, nil, &ConfigurationError{Provider: p.Name, Reason: err.Error()}
			}
		}
		env = append(env, v.Name+"="+value)
	}
	cmd := exec.Command(def.Command, def.Args...)
	cmd.Env, cmd.Dir, cmd.Stderr = env, def.WorkingDirectory, io.Discard
	setProcessAttributes(cmd)
	// Plain pipes rather than StdinPipe and StdoutPipe: Wait closes those when the process exits,
	// which would race with reading its last message.
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		stdin.Close()
		return nil, nil, err
	}
	cmd.Stdin, cmd.Stdout = childIn, childOut
	err = cmd.Start()
	childIn.Close()
	childOut.Close()
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, nil, err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = stdin.Close()
			select {
			case <-exited:
			case <-time.After(stopGrace):
				killProcessGroup(cmd)
				<-exited
			}
		})
	}
	reader := &lineLimitReader{r: stdout, limit: m.opts.MaxMessageBytes, faults: faults}
	transport := &mcp.IOTransport{Reader: reader, Writer: &stopOnClose{WriteCloser: stdin, stop: stop}, MaxLineLength: -1}
	return transport, stop, nil
}

// stopOnClose ends the process when the session closes its side.
type stopOnClose struct {
	io.WriteCloser
	stop func()
}

func (s *stopOnClose) Close() error {
	go s.stop()
	return nil
}

// errMessageTooLarge ends the reading of a provider that sent a message over the limit.
var errMessageTooLarge = errors.New("tool provider message over the size limit")

// lineLimitReader fails once a line (one JSON-RPC message) grows past limit bytes, and records
// that it did: a flood of output without newlines must not fill the memory. It also records a
// line that does not start like a JSON message.
type lineLimitReader struct {
	r      io.ReadCloser
	limit  int
	line   int
	faults *peerFaults
}

func (l *lineLimitReader) Read(p []byte) (int, error) {
	if l.faults.oversized.Load() {
		return 0, errMessageTooLarge
	}
	n, err := l.r.Read(p)
	for _, b := range p[:n] {
		switch {
		case b == '\n':
			l.line = 0
			continue
		case l.line == 0 && b != '{' && b != '[' && b != ' ' && b != '\t' && b != '\r':
			l.faults.garbled.Store(true)
		}
		if b != ' ' && b != '\t' && b != '\r' || l.line > 0 {
			l.line++
		}
		if l.line > l.limit {
			l.faults.oversized.Store(true)
			return 0, errMessageTooLarge
		}
	}
	return n, err
}

func (l *lineLimitReader) Close() error { return l.r.Close() }
