package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/reports"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/tensor"
)

// preflight checks every configuration of a sweep before the first run
// starts (runner.Preflight: one step on the meta backend, no training)
// and refuses the sweep, exit 2, listing every configuration that cannot
// run with its reason: a layer that refuses its input, or devices whose
// forecast peak memory exceeds what the machine has available (unless
// force). In one process every device's memory counts; in a
// multi-process run each rank holds one device, so the largest counts.
func preflight(ctx context.Context, cfgs []config.Config, force bool, available int64) error {
	var problems []string
	gpuFree := map[string][]int64{} // by backend, for backends on device memory
	for _, cfg := range cfgs {
		mem, err := runner.Preflight(ctx, cfg)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", cfg, err))
			continue
		}
		if force {
			continue
		}
		free, onDevices, err := deviceMemory(cfg.Backend, gpuFree)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", cfg, err))
			continue
		}
		if onDevices {
			if p := gpuShortfall(cfg, mem, free); p != "" {
				problems = append(problems, fmt.Sprintf("%s: %s (--force runs it anyway)", cfg, p))
			}
			continue
		}
		need := forecastNeed(cfg, mem)
		if available > 0 && need > available {
			problems = append(problems, fmt.Sprintf("%s: its devices need %s (the forecast peak on the meta backend), the machine has %s available (--force runs it anyway)",
				cfg, reports.FormatBytes(need), reports.FormatBytes(available)))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &InputError{Err: fmt.Errorf("%d of %d configurations cannot run, so none runs:\n  %s", len(problems), len(cfgs), strings.Join(problems, "\n  "))}
}

// deviceMemory returns the free memory of the physical devices of a
// backend whose devices have memory of their own (a GPU's), read once per
// backend into cache; onDevices is false for backends on host memory.
func deviceMemory(backend string, cache map[string][]int64) (free []int64, onDevices bool, err error) {
	if free, ok := cache[backend]; ok {
		return free, true, nil
	}
	b, err := tensor.Lookup(backend)
	if err != nil || b.Memory == nil {
		return nil, false, nil
	}
	if free, err = b.Memory(); err != nil {
		return nil, true, fmt.Errorf("reading the %s devices' free memory: %v", backend, err)
	}
	if len(free) == 0 {
		return nil, true, fmt.Errorf("the %s backend found no device", backend)
	}
	cache[backend] = free
	return free, true, nil
}

// gpuShortfall says which GPU cannot hold the devices placed on it
// (device k on GPU k mod len(free)), or returns "". In a multi-process
// run each rank's device is checked alone against the GPU it lands on.
func gpuShortfall(cfg config.Config, mem []tensor.MemStats, free []int64) string {
	need := make([]int64, len(free))
	for k, m := range mem {
		if cfg.Transport == profiler.TransportMPI {
			need[k%len(free)] = max(need[k%len(free)], m.PeakTotalBytes)
		} else {
			need[k%len(free)] += m.PeakTotalBytes
		}
	}
	for g, n := range need {
		if n > free[g] {
			return fmt.Sprintf("its devices on GPU %d need %s (the forecast peak on the meta backend), the GPU has %s free",
				g, reports.FormatBytes(n), reports.FormatBytes(free[g]))
		}
	}
	return ""
}

// forecastNeed is the memory cfg's devices need of this machine.
func forecastNeed(cfg config.Config, mem []tensor.MemStats) int64 {
	var sum, largest int64
	for _, m := range mem {
		sum += m.PeakTotalBytes
		largest = max(largest, m.PeakTotalBytes)
	}
	if cfg.Transport == profiler.TransportMPI {
		return largest
	}
	return sum
}
