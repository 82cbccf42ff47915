package profiler

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// CacheLevel is one cache of the first CPU as Linux's sysfs describes it.
type CacheLevel struct {
	Level int
	Type  string // "Data", "Instruction" or "Unified"
	Bytes int64
}

// CPUCaches returns the data and unified caches of CPU 0, smallest level
// first, from /sys/devices/system/cpu/cpu0/cache, or nil where the system
// does not say.
func CPUCaches() []CacheLevel {
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	var out []CacheLevel
	for _, d := range dirs {
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(d, name))
			return strings.TrimSpace(string(b))
		}
		c, ok := parseCacheLevel(read("level"), read("type"), read("size"))
		if ok && c.Type != "Instruction" {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b CacheLevel) int { return a.Level - b.Level })
	return out
}

// parseCacheLevel reads sysfs's level ("2"), type ("Unified") and size
// ("1024K") of one cache.
func parseCacheLevel(level, typ, size string) (CacheLevel, bool) {
	l, err := strconv.Atoi(level)
	if err != nil || l < 1 || typ == "" {
		return CacheLevel{}, false
	}
	mult := int64(1)
	switch {
	case strings.HasSuffix(size, "K"):
		mult, size = 1<<10, strings.TrimSuffix(size, "K")
	case strings.HasSuffix(size, "M"):
		mult, size = 1<<20, strings.TrimSuffix(size, "M")
	}
	n, err := strconv.ParseInt(size, 10, 64)
	if err != nil || n <= 0 {
		return CacheLevel{}, false
	}
	return CacheLevel{Level: l, Type: typ, Bytes: n * mult}, true
}

// FormatCaches writes caches as "L1d 48 KiB, L2 1 MiB, L3 32 MiB" (sizes
// per cache instance, as sysfs gives them), or "unknown" for none.
func FormatCaches(caches []CacheLevel) string {
	if len(caches) == 0 {
		return "unknown"
	}
	parts := make([]string, len(caches))
	for i, c := range caches {
		name := fmt.Sprintf("L%d", c.Level)
		if c.Type == "Data" {
			name += "d"
		}
		size := fmt.Sprintf("%d KiB", c.Bytes>>10)
		if c.Bytes >= 1<<20 && c.Bytes%(1<<20) == 0 {
			size = fmt.Sprintf("%d MiB", c.Bytes>>20)
		}
		parts[i] = name + " " + size
	}
	return strings.Join(parts, ", ")
}
