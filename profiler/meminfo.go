package profiler

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// AvailableMemoryBytes returns the memory the machine can give a new
// process without swapping (/proc/meminfo's MemAvailable), or 0 where the
// system does not say.
func AvailableMemoryBytes() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return parseMemAvailable(b)
}

// parseMemAvailable returns MemAvailable of meminfo's text in bytes, or 0
// when it holds none.
func parseMemAvailable(meminfo []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(key) != "MemAvailable" {
			continue
		}
		f := strings.Fields(val)
		if len(f) == 0 {
			return 0
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			return 0
		}
		unit := int64(1)
		if len(f) > 1 && strings.EqualFold(f[1], "kB") {
			unit = 1024
		}
		if n > (1<<62)/unit {
			return 0
		}
		return n * unit
	}
	return 0
}
