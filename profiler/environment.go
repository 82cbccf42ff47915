package profiler

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strings"

	"github.com/pipecast/pipecast/internal/buildinfo"
)

// LocalEnvironment describes this process's machine and build: host, OS,
// architecture, CPU model, cores, Go version and pipecast's version and
// revision. Backend, devices, huge pages, peak RSS and calibration are
// the run's to fill.
func LocalEnvironment() Environment {
	host, _ := os.Hostname()
	return Environment{
		Host: host, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUModel: CPUModel(),
		Cores: runtime.NumCPU(), GoVersion: runtime.Version(),
		Version: buildinfo.Version(), Revision: buildinfo.Revision(),
	}
}

// CPUModel returns the processor's name from /proc/cpuinfo, or "" where
// there is none (other systems, or architectures whose cpuinfo names no
// model).
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	return parseCPUModel(b)
}

// parseCPUModel returns the first "model name" in cpuinfo's text.
func parseCPUModel(cpuinfo []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(val)
		}
	}
	return ""
}
