// Package e2e drives the built `platform` binary as a user would: `platform serve` as a child
// process on a loopback port, the real kubectl on PATH against the kubeconfig it writes, SIGTERM
// to stop it. The tests live in the _test.go files; this package has no other code.
package e2e
