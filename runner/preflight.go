package runner

import (
	"context"
	"errors"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/tensor"
)

// Preflight checks, without training, that cfg can run: cfg.Validate,
// then one warm-up and one measured step on the meta backend, block by
// block, which builds every layer at its shapes and meets every refusal
// a layer raises for its input (batch norm given one value per channel
// in a training call: a micro-batch or a coop shard of one sample where
// the feature map is 1×1) as a *Fault naming the step, device, stage and
// block. It returns each device's forecast memory (the peaks a measured
// run of cfg would record). A partition balanced by time is checked on
// the MACs partition: measuring blocks is training. It takes
// milliseconds to a second.
func Preflight(ctx context.Context, cfg config.Config) ([]tensor.MemStats, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Balance.Timed() {
		cfg.Balance = config.BalanceMACs
	}
	devs, err := metaStep(ctx, cfg, RunOptions{Warmup: metaWarmup, Steps: 1, BlockTiming: true})
	var f *Fault
	if errors.As(err, &f) {
		return nil, f // its one line says where; the meta run is ours
	}
	if err != nil {
		return nil, err
	}
	out := make([]tensor.MemStats, len(devs))
	for d, ds := range devs {
		out[d] = ds.Memory
	}
	return out, nil
}
