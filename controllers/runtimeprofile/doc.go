// Package runtimeprofile reconciles RuntimeProfiles with a static check: a profile is Ready when
// it configures a runtime the platform has.
package runtimeprofile
