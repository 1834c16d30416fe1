// Package logging sets how much a platform process writes to stderr. The embedded kube apiserver
// (klog), etcd (zap), controller-runtime (logr) and the platform's own loggers follow one level,
// chosen by --log-level or the setting Platform:Logging:Level; in a terminal the default is warn,
// so that a clean start shows nothing but the ready lines.
package logging

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"github.com/spf13/pflag"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"platform.dev/platform/internal/config"
)

// Level is the least severe kind of message a process writes.
type Level int8

// The levels, from the most verbose.
const (
	Debug Level = iota
	Info
	Warn
	Error
)

const (
	// Setting is the key of the level in the YAML file or the environment
	// (Platform__Logging__Level); the flag wins.
	Setting = "Platform:Logging:Level"
	// FlagName is the flag of every long-running command.
	FlagName = "log-level"
)

var names = [...]string{Debug: "debug", Info: "info", Warn: "warn", Error: "error"}

func (l Level) String() string {
	if l < Debug || l > Error {
		return strconv.Itoa(int(l))
	}
	return names[l]
}

// Parse reads debug, info, warn (or warning) or error, in any case.
func Parse(s string) (Level, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "warning":
		return Warn, nil
	default:
		for l, name := range names {
			if v == name {
				return Level(l), nil
			}
		}
	}
	return 0, fmt.Errorf("%q: must be debug, info, warn or error", s)
}

// Set and Type make a *Level a pflag.Value.
func (l *Level) Set(s string) error {
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// Type is the flag's type in --help.
func (l *Level) Type() string { return "level" }

// AddFlag adds --log-level with def as its default.
func AddFlag(fs *pflag.FlagSet, l *Level, def Level) {
	*l = def
	fs.Var(l, FlagName, "least severe messages written to stderr: debug, info, warn or error ("+Setting+")")
}

// Resolve is the flag's level when it was given, else the setting's, else the flag's default.
func Resolve(fs *pflag.FlagSet, flagLevel Level, cfg *config.Config) (Level, error) {
	if fs.Changed(FlagName) {
		return flagLevel, nil
	}
	v := cfg.Get(Setting)
	if v == "" {
		return flagLevel, nil
	}
	l, err := Parse(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%w", Setting, err)
	}
	return l, nil
}

// current is the level Setup chose; loggers made later (etcd's) read it.
var current atomic.Int32

func init() { current.Store(int32(Warn)) }

// Current is the level of the last Setup (warn before any).
func Current() Level { return Level(current.Load()) }

// Zap is the least severe zap level to write at level l.
func (l Level) Zap() zapcore.Level {
	switch l {
	case Debug:
		// logr's V(n) is zap level -n: debug shows controller-runtime's V(1) to V(4).
		return zapcore.Level(-4)
	case Info:
		return zapcore.InfoLevel
	case Warn:
		return zapcore.WarnLevel
	default:
		return zapcore.ErrorLevel
	}
}

// klogVerbosity is klog's -v at each level: the apiserver logs what it does at V(2) and more.
func (l Level) klogVerbosity() int {
	if l == Debug {
		return 4
	}
	return 0
}

// Setup makes klog, controller-runtime and etcd (through Current) write messages of level l and
// above to w. At warn, klog's warnings that every start of an embedded apiserver prints and
// that ask nothing of the user (see expectedWarnings) are left out.
func Setup(l Level, w io.Writer) {
	current.Store(int32(l))
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	// Everything goes to one writer that filters by severity; FATAL also goes to stderr by
	// klog itself (the filter drops it), since klog exits right after.
	for name, value := range map[string]string{
		"logtostderr":     "false",
		"alsologtostderr": "false",
		"one_output":      "true",
		"stderrthreshold": "FATAL",
		"v":               strconv.Itoa(l.klogVerbosity()),
	} {
		if err := fs.Set(name, value); err != nil {
			panic(fmt.Sprintf("klog flag %s: %v", name, err))
		}
	}
	klog.SetOutput(&klogFilter{level: l, w: w})
	// controller-runtime takes the first logger it is given only: once per process.
	ctrl.SetLogger(Logger(l, w))
}

// Logger is the logr logger of the platform's own code and controller-runtime at level l: JSON
// lines on w. While the SQL store does not answer, its errors are written once per outageEvery
// with a count (see outages).
func Logger(l Level, w io.Writer) logr.Logger { return logger(l, w, outageEvery) }

func logger(l Level, w io.Writer, every time.Duration) logr.Logger {
	raw := zap.NewRaw(zap.WriteTo(w), zap.UseDevMode(false), zap.Level(l.Zap()),
		zap.RawZapOpts(uberzap.WrapCore(func(c zapcore.Core) zapcore.Core { return stopCore{c} })))
	// Outside controller-runtime's sampler, which lets through 100 lines of a message a second and
	// then one in a hundred: the outage's counts count every refusal.
	return zapr.NewLogger(raw.WithOptions(uberzap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return outageCore{Core: c, o: newOutages(c, every)}
	})))
}

// stopping is set once the process stops on a signal.
var stopping atomic.Bool

// Stopping says that the process stops on a signal: controllers stopped while they still start
// then report their informers' cancelled sync as errors, which are not.
func Stopping() { stopping.Store(true) }

// SignalContext is a context cancelled by the first of signals, as signal.NotifyContext's is,
// except that the stop is marked (Stopping) before anything sees the context end: what the
// cancellation interrupts then reports it as the stop it is, not as an error. stop releases the
// signals.
func SignalContext(parent context.Context, signals ...os.Signal) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	received := make(chan os.Signal, 1)
	signal.Notify(received, signals...)
	go func() {
		select {
		case <-received:
			Stopping()
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(received)
		cancel()
	}
}

// stopCore drops the errors of a stop during start (see Stopping).
type stopCore struct{ zapcore.Core }

func (c stopCore) Check(entry zapcore.Entry, checked *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if stopping.Load() && entry.Message == "failed to get informer from cache" {
		return checked
	}
	return c.Core.Check(entry, checked)
}

// Write drops them too: a core wrapped around this one (outageCore) takes error entries in its
// own Check and writes them here without this Check.
func (c stopCore) Write(entry zapcore.Entry, fields []zapcore.Field) error {
	if stopping.Load() && entry.Message == "failed to get informer from cache" {
		return nil
	}
	return c.Core.Write(entry, fields)
}

func (c stopCore) With(fields []zapcore.Field) zapcore.Core { return stopCore{c.Core.With(fields)} }

// klogFilter receives klog's entries, one per Write, each starting with its severity letter
// (I, W, E, F) as klog's header does.
type klogFilter struct {
	level Level
	mu    sync.Mutex
	w     io.Writer
}

func (f *klogFilter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var sev Level
	switch p[0] {
	case 'I':
		sev = Info
	case 'W':
		sev = Warn
	case 'E':
		sev = Error
	case 'F':
		return len(p), nil // klog wrote it to stderr already
	default:
		sev = Info
	}
	if sev < f.level || (f.level == Warn && sev == Warn && expected(p)) || cancelledByStop(p) {
		return len(p), nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.w.Write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// expectedWarnings are parts of klog warnings that an embedded apiserver prints on every start,
// by design of this single-process installation; at warn they would bury the ready lines.
var expectedWarnings = [][]byte{
	// The apiextensions group lists v1beta1 among its versions, which has no resources left.
	[]byte("Skipping API apiextensions.k8s.io/v1beta1 because it has no resources."),
}

// cancelledByStop says that an entry reports a request that a stop cancelled: the leader elector
// reads its Lease once more as its term or the process ends and calls the cancellation an error.
// The signal cancels that read before the serve loop can mark the stop (see Stopping), so the
// elector's cancelled reads are dropped whenever they come.
func cancelledByStop(entry []byte) bool {
	return bytes.Contains(entry, []byte(`err="context canceled"`)) &&
		(stopping.Load() || bytes.Contains(entry, []byte("leaderelection.go")))
}

func expected(entry []byte) bool {
	for _, s := range expectedWarnings {
		if bytes.Contains(entry, s) {
			return true
		}
	}
	return false
}
