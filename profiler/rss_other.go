//go:build !unix

package profiler

// procPeakRSS and rusagePeakRSS know no source on this system.
func procPeakRSS() int64   { return 0 }
func rusagePeakRSS() int64 { return 0 }
