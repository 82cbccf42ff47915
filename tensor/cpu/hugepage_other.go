//go:build !linux

package cpu

// adviseHugePages does nothing outside Linux (see hugepage_linux.go).
func adviseHugePages([]float32) {}
