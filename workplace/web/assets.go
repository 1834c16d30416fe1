// Package web holds the built Workplace and Console apps (their sources are beside it; `make web`
// rebuilds dist/, which is committed so that a plain `go build` serves them).
package web

import "embed"

// Dist is the build output: dist/workplace (served by `platform workplace`) and dist/console
// (served by `platform serve` under /console/).
//
//go:embed all:dist
var Dist embed.FS
