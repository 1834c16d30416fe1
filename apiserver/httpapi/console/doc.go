// Package console is the operations Console area of the service API: the web pages (/tasks,
// /cleanup, FlowRun and Entry detail, /settings/...) served from the built Console app, and the
// hand-over of a signed-in browser to the Workplace UI.
package console
