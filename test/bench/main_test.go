package bench

import (
	"flag"
	"os"
	"testing"

	"platform.dev/platform/internal/logging"
)

// ServerLogsEnv, when set to a non-empty value, keeps the control plane's informational logs.
// By default only errors are logged: the informational and warning lines of every start (klog's,
// controller-runtime's and etcd's "apply request took too long" on a loaded machine) would
// otherwise split benchmark result lines and break benchstat.
const ServerLogsEnv = "BENCH_SERVER_LOGS"

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(ServerLogsEnv) == "" {
		logging.Setup(logging.Error, os.Stderr)
	}
	os.Exit(m.Run())
}
