// Package bench holds the control plane's benchmarks (run them with `make bench`): startup time,
// custom-resource create throughput and latency, and `kubectl apply` of a large directory, each
// against the in-process control plane of apiserver/testenv. The package has no code of its own;
// the benchmarks are in the _test.go files.
package bench
