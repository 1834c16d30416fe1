// Package trigger is the Trigger scheduler: it keeps one schedule registration per enabled
// Trigger (a timer of an injectable clock at its next firing), rebuilt from the Trigger resources
// after every restart, and at each firing decides the due instants with the misfire policy and
// fires them through the Work store, which lets each scheduled instant submit at most once.
package trigger
