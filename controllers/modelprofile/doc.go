// Package modelprofile reconciles ModelProfiles: it resolves each profile's ModelProvider and
// the discovered Model it asks for, and reports whether the profile is usable (Ready).
package modelprofile
