//go:build !unix

package listener

func descriptorLimit() uint64 { return 1024 }
