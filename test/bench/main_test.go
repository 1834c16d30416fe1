package bench

import (
	"flag"
	"io"
	"os"
	"testing"

	"k8s.io/klog/v2"
)

// ServerLogsEnv, when set to a non-empty value, keeps the control plane's informational logs.
// By default only errors are logged: the informational lines of every start would otherwise
// split benchmark result lines and break benchstat.
const ServerLogsEnv = "BENCH_SERVER_LOGS"

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(ServerLogsEnv) == "" {
		quietKlog()
	}
	os.Exit(m.Run())
}

// quietKlog drops klog's info and warning lines and keeps errors on stderr.
func quietKlog() {
	flags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(flags)
	for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "ERROR"} {
		if err := flags.Set(name, value); err != nil {
			panic(err)
		}
	}
	klog.SetOutput(io.Discard)
}
