//go:build unix

package controlplane

import "syscall"

// PrivateFiles makes every file and directory this process creates from now on private to its
// user (umask 077), whatever the umask it inherited: the SQLite store's WAL and shared-memory
// files, etcd's and the blobs' files are created by libraries that ask for 0644.
func PrivateFiles() { syscall.Umask(0o077) }
