package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/tensor/meta"
)

// metaWarmup is the warm-up step of a meta run: the optimizer's state is
// allocated by the first update, so only the second step shows the steady
// state that a measured run (which warms up) records.
const metaWarmup = 1

// MetaStep trains cfg for one steady-state step on the meta backend,
// whose tensors have shapes and are accounted by category like a real
// device's but hold no data and cost no compute, and returns what each
// device did in it: its memory (the peaks a measured run of cfg
// records, with every schedule's keep-and-release order and the CPU
// kernels' scratch for cfg's threads), its whole-op events with the
// bytes each moved, and its transfer counters of that step alone. gate,
// when not nil, orders the ops as RunOptions.Gate does. It is how the
// predictor reads a configuration's memory without training.
func MetaStep(ctx context.Context, cfg config.Config, gate func(ctx context.Context, device, op int) error) ([]DeviceStep, error) {
	return metaStep(ctx, cfg, RunOptions{Warmup: metaWarmup, Steps: 1, Gate: gate})
}

// metaStep is MetaStep with the run's options given.
func metaStep(ctx context.Context, cfg config.Config, opts RunOptions) ([]DeviceStep, error) {
	mc := cfg
	mc.Backend = meta.BackendName // with the run's threads: they decide the convolutions' scratch
	// The data's values cannot change an allocation; a synthetic set
	// avoids reading a dataset from disk.
	mc.Dataset = "synthetic"
	// Memory does not depend on how fast a device is, and a forecast
	// must not fail where the run is told to.
	mc.Straggler, mc.Fail = config.Straggler{}, nil
	mc.ModelConfig.Sizes = slices.Clone(cfg.ModelConfig.Sizes)
	mc.Bounds = slices.Clone(cfg.Bounds)
	res, err := Run(ctx, mc, opts)
	if err != nil {
		return nil, fmt.Errorf("memory of %s on the meta backend: %w", cfg.Model, err)
	}
	devs := res.Steps[0].Devices
	for d := range devs {
		before := res.Warmup[metaWarmup-1].Devices[d].Comm
		devs[d].Comm.SentBytes -= before.SentBytes
		devs[d].Comm.ReceivedBytes -= before.ReceivedBytes
		devs[d].Comm.Messages -= before.Messages
	}
	return devs, nil
}
