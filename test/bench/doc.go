// Package bench holds the control plane's benchmarks, run by `make bench`: startup time,
// custom-resource create throughput and latency, and `kubectl apply` of a large directory, each
// against the in-process control plane of apiserver/testenv. The package has no code of its own;
// the benchmarks are in the _test.go files.
//
// The control plane's informational logs are dropped (they would split benchmark result lines);
// set BENCH_SERVER_LOGS=1 to keep them. With PLATFORM_TEST_KUBECONFIG set the benchmarks skip.
package bench
