package profiler

import (
	"bytes"
	"math"
	"strconv"
)

// PeakRSSBytes returns the peak resident set size of the process so far
// (its high-water mark), or 0 where the system does not say. On Linux it
// reads VmHWM from /proc/self/status; elsewhere, and when /proc is not
// mounted, it asks getrusage for the maximum resident set size.
func PeakRSSBytes() int64 {
	if n := procPeakRSS(); n > 0 {
		return n
	}
	return rusagePeakRSS()
}

// parseVmHWM finds the "VmHWM:" line of a /proc/PID/status file and
// returns its value in bytes; the kernel writes it in kB (KiB).
func parseVmHWM(status []byte) (int64, bool) {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte("VmHWM:"))
		if !ok {
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) != 2 || string(fields[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil || kb < 0 || kb > math.MaxInt64>>10 {
			// Past 8 EiB the bytes would overflow an int64.
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// maxrssBytes converts getrusage's ru_maxrss to bytes: Darwin and iOS
// report bytes, Linux and the BSDs kilobytes (KiB).
func maxrssBytes(maxrss int64, goos string) int64 {
	if maxrss <= 0 {
		return 0
	}
	if goos == "darwin" || goos == "ios" {
		return maxrss
	}
	return maxrss << 10
}
