package predictor

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/runner/schedule"
	"github.com/pipecast/pipecast/tensor"
	_ "github.com/pipecast/pipecast/tensor/meta" // registers the "meta" backend
)

// Memory is not fitted: the runner itself trains the configuration for
// one step on the meta backend, whose tensors have shapes and are
// accounted by category like a real device's but hold no data and cost no
// compute. The peaks are therefore those of the code path a measured run
// takes, with every schedule's keep-and-release order, and the transfer
// counts are the runner's own. The meta backend accounts the CPU
// convolutions' scratch for the run's threads, and Predict runs the step
// in the order of its simulated timeline, so that what is in flight
// between devices is what that timeline implies.

// metaWarmup is the warm-up step of a meta run: the optimizer's state is
// allocated by the first update, so only the second step shows the steady
// state that a measured run (which warms up) records.
const metaWarmup = 1

// metaStep is what one steady-state step of a configuration does on meta
// devices.
type metaStep struct {
	// devices[d] holds device d's memory of the step, its whole-op events
	// (with the bytes each moved) and its transfer counters of the step
	// alone.
	devices []runner.DeviceStep
}

// metaKey identifies a meta run: everything that changes what a step
// allocates or moves, including the threads (scratch buffers are per
// thread) and the order the ops run in.
type metaKey struct {
	model     string
	image     int
	classes   int
	width     float64
	noDropout bool
	sizes     string
	threads   int
	batch     int
	schedule  schedule.Options
	balance   string
	bounds    string
	order     uint64 // the op order's fingerprint; 0 for free running
}

// metaCache holds the meta runs made so far, so that many forecasts of few
// distinct configurations run each one once.
var metaCache struct {
	sync.Mutex
	runs map[metaKey]*metaStep
}

// PeakMemory returns each device's peak bytes by category in one training
// step of cfg, exactly as a measured run accounts them: cfg runs one
// warm-up and one measured step on the meta backend. cfg.Bounds, when set,
// fixes the partition; otherwise cfg's balance decides it ("time" then
// measures meta blocks, which is meaningless: set Bounds).
func PeakMemory(cfg runner.Config) ([]tensor.MemStats, error) {
	ms, err := metaRun(cfg)
	if err != nil {
		return nil, err
	}
	out := make([]tensor.MemStats, len(ms.devices))
	for d, ds := range ms.devices {
		out[d] = ds.Memory
	}
	return out, nil
}

// metaRun returns the meta step of cfg, from the cache when it ran before.
func metaRun(cfg runner.Config) (*metaStep, error) { return cachedMetaRun(cfg, 0, nil) }

// cachedMetaRun is metaRun with the ops gated by gate (nil for none),
// cached under order, which identifies the gate's order.
func cachedMetaRun(cfg runner.Config, order uint64, gate func(ctx context.Context, device, op int) error) (*metaStep, error) {
	cfg = cfg.WithDefaults()
	key := metaKey{
		model: cfg.Model, image: cfg.ModelConfig.Image, classes: cfg.ModelConfig.Classes,
		width: cfg.ModelConfig.Width, noDropout: cfg.ModelConfig.NoDropout,
		sizes: fmt.Sprint(cfg.ModelConfig.Sizes), threads: cfg.Threads, batch: cfg.Batch, schedule: cfg.Schedule,
		balance: cfg.Balance, bounds: fmt.Sprint(cfg.Bounds), order: order,
	}
	metaCache.Lock()
	ms, ok := metaCache.runs[key]
	metaCache.Unlock()
	if ok {
		return ms, nil
	}
	mc := cfg
	mc.Backend = "meta" // with the run's threads: they decide the convolutions' scratch
	// The data's values cannot change an allocation; a synthetic set
	// avoids reading a dataset from disk.
	mc.Dataset = "synthetic"
	mc.ModelConfig.Sizes = slices.Clone(cfg.ModelConfig.Sizes)
	mc.Bounds = slices.Clone(cfg.Bounds)
	res, err := runner.Run(context.Background(), mc, runner.RunOptions{Warmup: metaWarmup, Steps: 1, Gate: gate})
	if err != nil {
		return nil, fmt.Errorf("memory of %s on the meta backend: %w", cfg.Model, err)
	}
	ms = &metaStep{devices: res.Steps[0].Devices}
	for d := range ms.devices {
		before := res.Warmup[metaWarmup-1].Devices[d].Comm
		ms.devices[d].Comm.SentBytes -= before.SentBytes
		ms.devices[d].Comm.ReceivedBytes -= before.ReceivedBytes
		ms.devices[d].Comm.Messages -= before.Messages
	}
	metaCache.Lock()
	if metaCache.runs == nil {
		metaCache.runs = map[metaKey]*metaStep{}
	}
	metaCache.runs[key] = ms
	metaCache.Unlock()
	return ms, nil
}
