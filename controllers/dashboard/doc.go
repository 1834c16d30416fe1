// Package dashboard reconciles Dashboards: a Dashboard is Ready when every Entry it shows is
// published and it is not a second default of its workspace.
package dashboard
