package config

import (
	"os"
	"strconv"
	"strings"
)

// goMaxThreads is the Go runtime's default limit of OS threads
// (runtime/debug.SetMaxThreads); past it the program dies.
const goMaxThreads = 10000

// runtimeThreads is room left for the threads the Go runtime and the
// transports run besides the devices' workers.
const runtimeThreads = 200

// MaxThreads is how many device threads a run may ask for: the Go
// runtime's limit, or the system's (/proc/sys/kernel/threads-max) where
// that is lower, less room for the runtime's own threads.
func MaxThreads() int {
	limit := goMaxThreads
	if b, err := os.ReadFile("/proc/sys/kernel/threads-max"); err == nil {
		if n, ok := parseThreadsMax(b); ok {
			limit = min(limit, n)
		}
	}
	return max(limit-runtimeThreads, 1)
}

// parseThreadsMax reads /proc/sys/kernel/threads-max: one positive
// decimal count and a newline. ok is false for anything else.
func parseThreadsMax(b []byte) (n int, ok bool) {
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return n, err == nil && n > 0
}
