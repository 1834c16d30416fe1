package e2e

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// startupFailureDeadline is how soon a start that cannot succeed must say so. The slowest case
// is an unreachable external etcd, which the server gives 10 s.
const startupFailureDeadline = 20 * time.Second

func TestStartupFaultsFailFastWithOneLineReason(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		// setup prepares the fault and returns the arguments after `platform serve`.
		setup func(t *testing.T) []string
		// want are regular expressions the last line of stderr must match.
		want []string
	}{
		"kube API port already in use": {
			setup: func(t *testing.T) []string {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				return []string{"--data-dir", t.TempDir(), "--kube-addr", l.Addr().String()}
			},
			want: []string{`address already in use`, `127\.0\.0\.1:\d+`},
		},
		"service API port already in use": {
			setup: func(t *testing.T) []string {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				return []string{"--data-dir", t.TempDir(), "--kube-addr", "127.0.0.1:0", "--http-addr", l.Addr().String()}
			},
			want: []string{`service API`, `address already in use`},
		},
		"data directory below a regular file": {
			setup: func(t *testing.T) []string {
				file := filepath.Join(t.TempDir(), "a-file")
				if err := os.WriteFile(file, []byte("not a directory\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				return []string{"--data-dir", filepath.Join(file, "data"), "--kube-addr", "127.0.0.1:0"}
			},
			want: []string{`data directory`, `a-file/data`, `not a directory`},
		},
		"etcd database file overwritten with garbage": {
			setup: func(t *testing.T) []string {
				dataDir := stoppedDataDir(t)
				corrupt(t, filepath.Join(dataDir, "etcd", "member", "snap", "db"), false)
				return []string{"--data-dir", dataDir, "--kube-addr", "127.0.0.1:0"}
			},
			want: []string{`(?i)etcd`, `(?i)unreadable|corrupt|invalid`},
		},
		"etcd write-ahead log overwritten with garbage": {
			setup: func(t *testing.T) []string {
				dataDir := stoppedDataDir(t)
				wals, err := filepath.Glob(filepath.Join(dataDir, "etcd", "member", "wal", "*.wal"))
				if err != nil || len(wals) == 0 {
					t.Fatalf("no WAL file in %s (%v)", dataDir, err)
				}
				for _, wal := range wals {
					corrupt(t, wal, true)
				}
				return []string{"--data-dir", dataDir, "--kube-addr", "127.0.0.1:0"}
			},
			want: []string{`(?i)etcd`, `(?i)unreadable|corrupt|invalid`},
		},
		"etcd server that is not a URL": {
			setup: func(t *testing.T) []string {
				return []string{"--data-dir", t.TempDir(), "--kube-addr", "127.0.0.1:0", "--etcd-servers", "not-a-url"}
			},
			want: []string{`--etcd-servers`, `not-a-url`},
		},
		"etcd server that nobody answers on": {
			setup: func(t *testing.T) []string {
				return []string{"--data-dir", t.TempDir(), "--kube-addr", "127.0.0.1:0", "--etcd-servers", "http://127.0.0.1:1"}
			},
			want: []string{`--etcd-servers`, `127\.0\.0\.1:1\b`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			args := tc.setup(t)

			// Past the deadline the process is killed, which fails the checks below.
			if !slices.Contains(args, "--http-addr") {
				args = append(args, "--http-addr", "127.0.0.1:0")
			}
			r := platform(startupFailureDeadline+5*time.Second, append([]string{"serve"}, args...)...)
			g.Expect(r.ExitCode).NotTo(Equal(0), r.String())
			g.Expect(r.Took).To(BeNumerically("<", startupFailureDeadline), r.String())
			g.Expect(r.Stdout).NotTo(ContainSubstring("kube API ready"), r.String())
			last := lastLine(r.Stderr)
			g.Expect(last).To(HavePrefix("platform: "), r.String())
			for _, want := range tc.want {
				g.Expect(last).To(MatchRegexp(want), r.String())
			}
			g.Expect(r.Stderr).NotTo(ContainSubstring("panic:"), "a startup fault is reported, not a crash: %s", r)
			g.Expect(r.Stderr).NotTo(ContainSubstring("goroutine "), "a startup fault is reported, not a crash: %s", r)
		})
	}
}

// stoppedDataDir is the data directory of a server that started once and was stopped cleanly.
func stoppedDataDir(t *testing.T) string {
	t.Helper()
	dataDir := filepath.Join(t.TempDir(), "data")
	s, err := startServer(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, err := s.stop(); err != nil || code != 0 {
		t.Fatalf("stop (exit code %d, %v):\n%s", code, err, s.output())
	}
	return dataDir
}

// corrupt overwrites a file with bytes that no etcd file format accepts: the whole file, or
// only its first 64 KiB when keepSize is set (a WAL is preallocated and its size matters).
func corrupt(t *testing.T, path string, keepSize bool) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	garbage := bytes.Repeat([]byte("this is not etcd data\n"), 64<<10/22)
	if keepSize && int64(len(garbage)) > info.Size() {
		garbage = garbage[:info.Size()]
	}
	if !keepSize {
		if err := os.WriteFile(path, garbage, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(garbage, 0); err != nil {
		t.Fatal(err)
	}
}
