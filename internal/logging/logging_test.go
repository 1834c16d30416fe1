package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"platform.dev/platform/internal/config"
)

func TestTheLevelIsTheFlagsThenTheSettingsThenTheDefault(t *testing.T) {
	for name, tc := range map[string]struct {
		args    []string
		environ []string
		want    Level
		wantErr string
	}{
		"the default":                      {want: Warn},
		"the setting from the environment": {environ: []string{"Platform__Logging__Level=debug"}, want: Debug},
		"the flag over the setting":        {args: []string{"--log-level", "error"}, environ: []string{"Platform__Logging__Level=debug"}, want: Error},
		"any case, and warning for warn":   {environ: []string{"Platform__Logging__Level=WARNING"}, want: Warn},
		"a bad setting names itself":       {environ: []string{"Platform__Logging__Level=loud"}, wantErr: `Platform:Logging:Level="loud": must be debug, info, warn or error`},
		"a bad flag is refused":            {args: []string{"--log-level", "loud"}, wantErr: `must be debug, info, warn or error`},
	} {
		t.Run(name, func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			var l Level
			AddFlag(fs, &l, Warn)
			err := fs.Parse(tc.args)
			if err == nil {
				cfg, loadErr := config.Load("", tc.environ)
				if loadErr != nil {
					t.Fatal(loadErr)
				}
				l, err = Resolve(fs, l, cfg)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || l != tc.want {
				t.Fatalf("level = %s (%v), want %s", l, err, tc.want)
			}
		})
	}
}

func TestOnlyMessagesAtOrAboveTheLevelAreWritten(t *testing.T) {
	for name, tc := range map[string]struct {
		level Level
		want  []string
	}{
		"warn (the terminal's)": {level: Warn, want: []string{"klog warning", "klog error", "controller error"}},
		"error":                 {level: Error, want: []string{"klog error", "controller error"}},
		"info":                  {level: Info, want: []string{"klog info", "klog warning", "klog error", "controller info", "controller error", "apiextensions.k8s.io/v1beta1"}},
		"debug":                 {level: Debug, want: []string{"klog verbose", "klog info", "controller debug", "controller info"}},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			Setup(tc.level, &out)
			klog.V(4).Info("klog verbose")
			klog.Info("klog info")
			klog.Warning("klog warning")
			klog.Warning("Skipping API apiextensions.k8s.io/v1beta1 because it has no resources.")
			klog.Error("klog error")
			klog.Flush()
			log := Logger(tc.level, &out)
			log.V(1).Info("controller debug")
			log.Info("controller info")
			log.Error(nil, "controller error")
			all := []string{"klog verbose", "klog info", "klog warning", "klog error", "controller debug", "controller info", "controller error", "apiextensions.k8s.io/v1beta1"}
			for _, msg := range all {
				wanted := false
				for _, w := range tc.want {
					wanted = wanted || w == msg
				}
				if tc.level == Debug {
					wanted = true
				}
				if strings.Contains(out.String(), msg) != wanted {
					t.Errorf("%q written = %v, want %v; output:\n%s", msg, !wanted, wanted, out.String())
				}
			}
		})
	}
	Setup(Warn, &bytes.Buffer{})
}

func TestTheLeaderElectorsCancelledLeaseReadIsNotAnErrorButOtherErrorsAre(t *testing.T) {
	var out bytes.Buffer
	f := &klogFilter{level: Warn, w: &out}
	cancelled := `E1126 22:57:50.557214   26213 leaderelection.go:473] "Error retrieving lease lock" err="context canceled" lock="kube-system/platform-controller-manager"` + "\n"
	refused := `E1126 22:57:50.557214   26213 leaderelection.go:473] "Error retrieving lease lock" err="connection refused" lock="kube-system/platform-controller-manager"` + "\n"
	if _, err := f.Write([]byte(cancelled)); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("the elector's read cancelled by a stop was written: %s", out.String())
	}
	if _, err := f.Write([]byte(refused)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "connection refused") {
		t.Errorf("a failed Lease read that no stop caused was dropped; output: %q", out.String())
	}
}

// While PostgreSQL restarts every request and every worker's round fails alike: the log says so
// once at once, then once per period with the count of what was refused and by what, and goes
// quiet when the refusals stop; other errors are written as ever.
func TestAnOutageOfTheSQLStoreIsLoggedOncePerPeriodWithWhatItRefused(t *testing.T) {
	g := NewWithT(t)
	var out syncBuffer
	log := logger(Warn, &out, 300*time.Millisecond)
	down := fmt.Errorf("list tasks: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"})
	for range 500 {
		log.WithName("httpapi").Error(down, "request failed", "method", "GET", "route", "GET /api/tasks", "status", 503)
	}
	for range 10 {
		log.WithName("executor").Error(down, "executing a flow run")
	}
	log.WithName("executor").Error(errors.New("a step's expression does not compile"), "executing a flow run")
	// An outbound request's network error is no outage of the store: written each time.
	for range 2 {
		log.WithName("sourceregistries").Error(&url.Error{Op: "Get", URL: "https://registry.example/index.json",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, "scheduled refresh")
	}

	lines := out.lines()
	g.Expect(lines).To(HaveLen(4), "the outage once, and each error that is not one")
	g.Expect(lines[2]).To(And(ContainSubstring("scheduled refresh"), Not(ContainSubstring(`"outage"`))))
	g.Expect(lines[0]).To(And(ContainSubstring(`"msg":"request failed"`), ContainSubstring(`"route":"GET /api/tasks"`),
		ContainSubstring(`"outage":"the SQL store does not answer: until it does, one line per 300ms counts what it refused"`)))
	g.Expect(lines[0]).NotTo(ContainSubstring("stacktrace"), "an outage's stack says nothing")
	g.Expect(lines[1]).To(And(ContainSubstring("does not compile"), ContainSubstring("stacktrace")))

	// The period ends with what it refused.
	g.Eventually(out.lines).WithTimeout(5 * time.Second).Should(HaveLen(5))
	var summary struct {
		Msg       string         `json:"msg"`
		Refused   int            `json:"refused"`
		RefusedBy map[string]int `json:"refusedBy"`
		Error     string         `json:"error"`
	}
	g.Expect(json.Unmarshal([]byte(out.lines()[4]), &summary)).To(Succeed())
	g.Expect(summary.Msg).To(Equal("the SQL store still does not answer: 509 refused in the last 300ms"))
	g.Expect(summary.Refused).To(Equal(509))
	g.Expect(summary.RefusedBy).To(Equal(map[string]int{"httpapi: request failed": 499, "executor: executing a flow run": 10}))
	g.Expect(summary.Error).To(ContainSubstring("57P01"))

	// A period without refusals ends the outage silently; the next one is written at once.
	time.Sleep(700 * time.Millisecond)
	g.Expect(out.lines()).To(HaveLen(5))
	log.WithName("hub").Error(down, "numbering the Workplace outbox failed; trying again")
	g.Expect(out.lines()).To(HaveLen(6))
	g.Expect(out.lines()[5]).To(ContainSubstring("numbering the Workplace outbox failed"))
}

// syncBuffer is a log's output read while the log's timer may write to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Split(strings.TrimSpace(b.buf.String()), "\n")
}
