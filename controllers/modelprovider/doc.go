// Package modelprovider reconciles ModelProviders with a static check: a provider is Ready when
// its definition is complete and its credential Secret exists. Reconciling never contacts the
// provider; connectivity tests and model discovery are explicit actions.
package modelprovider
