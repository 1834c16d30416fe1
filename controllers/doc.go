// Package controllers is the home of the controller-runtime reconcilers that turn Management state
// into Runtime state; each kind gets its own sub-package (controllers/<kind>/).
package controllers
