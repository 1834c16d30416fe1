//go:build !unix

package controlplane

// PrivateFiles does nothing where there is no umask.
func PrivateFiles() {}
