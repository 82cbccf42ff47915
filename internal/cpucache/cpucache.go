package cpucache

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Level is one data or unified cache of the first CPU.
type Level struct {
	Level int
	Type  string // "Data" or "Unified"
	Bytes int64  // one instance's size
	// SharedBy is how many logical CPUs share the instance (1 where sysfs
	// does not say).
	SharedBy int
}

// sysfsRoot is where Linux describes CPU 0's caches.
const sysfsRoot = "/sys/devices/system/cpu/cpu0/cache"

// Levels returns CPU 0's data and unified caches, smallest level first,
// or nil where the system does not say. It reads sysfs once per process.
func Levels() []Level { return slices.Clone(levels()) }

var levels = sync.OnceValue(func() []Level { return read(sysfsRoot) })

// Size returns the size of the data or unified cache at level (1, 2, 3)
// and how many logical CPUs share it; ok is false where there is none.
func Size(level int) (bytes int64, sharedBy int, ok bool) {
	for _, c := range levels() {
		if c.Level == level {
			return c.Bytes, c.SharedBy, true
		}
	}
	return 0, 0, false
}

// read reads the caches described under root (sysfs's layout: one
// index* directory per cache holding level, type, size and
// shared_cpu_list).
func read(root string) []Level {
	dirs, _ := filepath.Glob(filepath.Join(root, "index*"))
	var out []Level
	for _, d := range dirs {
		get := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(d, name))
			return strings.TrimSpace(string(b))
		}
		c, ok := parse(get("level"), get("type"), get("size"), get("shared_cpu_list"))
		if ok && c.Type != "Instruction" {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Level) int { return a.Level - b.Level })
	return out
}

// parse reads sysfs's level ("2"), type ("Unified"), size ("1024K") and
// shared_cpu_list ("0-1", "0,2-3"; empty: 1) of one cache.
func parse(level, typ, size, shared string) (Level, bool) {
	l, err := strconv.Atoi(level)
	if err != nil || l < 1 || typ == "" {
		return Level{}, false
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
		return Level{}, false
	}
	return Level{Level: l, Type: typ, Bytes: n * mult, SharedBy: countCPUs(shared)}, true
}

// countCPUs counts the CPUs of a sysfs CPU list ("0-3,8"), 1 for an empty
// or unreadable one.
func countCPUs(list string) int {
	n := 0
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 1
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 1
			}
		}
		n += b - a + 1
	}
	return max(n, 1)
}

// Format writes caches as "L1d 48 KiB, L2 1 MiB, L3 32 MiB" (sizes per
// instance, as sysfs gives them), or "unknown" for none.
func Format(caches []Level) string {
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
