//go:build !linux

package cpu

// hugePagesState: huge pages are advised on Linux only (see
// hugepage_linux.go).
func hugePagesState() string { return "unavailable" }

// adviseHugePages does nothing outside Linux.
func adviseHugePages([]float32) {}
