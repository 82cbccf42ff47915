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
	for _, cfg := range cfgs {
		mem, err := runner.Preflight(ctx, cfg)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", cfg, err))
			continue
		}
		need := forecastNeed(cfg, mem)
		if !force && available > 0 && need > available {
			problems = append(problems, fmt.Sprintf("%s: its devices need %s (the forecast peak on the meta backend), the machine has %s available (--force runs it anyway)",
				cfg, reports.FormatBytes(need), reports.FormatBytes(available)))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &InputError{Err: fmt.Errorf("%d of %d configurations cannot run, so none runs:\n  %s", len(problems), len(cfgs), strings.Join(problems, "\n  "))}
}

// forecastNeed is the memory cfg's devices need of this machine.
func forecastNeed(cfg config.Config, mem []tensor.MemStats) int64 {
	var sum, largest int64
	for _, m := range mem {
		sum += m.PeakTotalBytes
		largest = max(largest, m.PeakTotalBytes)
	}
	if cfg.WithDefaults().Transport == profiler.TransportMPI {
		return largest
	}
	return sum
}
