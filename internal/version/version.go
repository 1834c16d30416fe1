// Package version reports the platform's own version, set at build time.
package version

// Version is the product version; `make build` sets it from git with -ldflags.
var Version = "dev"
