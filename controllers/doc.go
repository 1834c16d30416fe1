// Package controllers is the home of the controller-runtime reconcilers that turn Management state
// into Runtime state; each kind gets its own sub-package (controllers/<kind>/). This package
// assembles them into one manager (NewManager, SetupAll), which `platform serve` runs in-process
// and `platform controllers` runs alone against an existing cluster.
package controllers
