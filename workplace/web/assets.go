// Package web holds the built Workplace and Console apps (their sources are beside it; `make web`
// rebuilds dist/, which is committed so that a plain `go build` serves them).
package web

import "embed"

// Dist is the build output: dist/workplace (served by `platform workplace`) and dist/console
// (served by `platform serve` under /console/).
//
//go:embed all:dist
var Dist embed.FS

// Shared is what the server-rendered identity pages share with the apps, served as files so that
// their Content-Security-Policy needs no inline style: the design tokens and base elements
// (base.css, which the apps' styles.css imports), the pages' own layout (pages.css) and the icon.
//
//go:embed src/shared/base.css src/shared/pages.css src/shared/favicon.svg
var Shared embed.FS
