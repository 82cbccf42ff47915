//go:build unix

package profiler

import (
	"os"
	"runtime"
	"syscall"
)

// procPeakRSS reads VmHWM from procfs; 0 where there is none.
func procPeakRSS() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	n, _ := parseVmHWM(status)
	return n
}

// rusagePeakRSS asks getrusage; 0 if it fails.
func rusagePeakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return maxrssBytes(int64(ru.Maxrss), runtime.GOOS)
}
