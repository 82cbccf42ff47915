package predictor

import (
	"context"
	"fmt"
	"sync"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/tensor"
)

// Memory is not fitted: the runner itself trains the configuration for
// one step on the meta backend (runner.MetaStep), whose tensors have
// shapes and are accounted by category like a real device's but hold no
// data and cost no compute. The peaks are therefore those of the code
// path a measured run takes, with every schedule's keep-and-release
// order, and the transfer counts are the runner's own. The meta backend
// accounts the CPU convolutions' scratch for the run's threads, and
// Predict runs the step in the order of its simulated timeline, so that
// what is in flight between devices is what that timeline implies. This
// is the predictor's one call into the runner.

// metaStep is what one steady-state step of a configuration does on meta
// devices: devices[d] holds device d's memory of the step, its whole-op
// events (with the bytes each moved) in program order and its transfer
// counters of the step alone.
type metaStep struct {
	devices []runner.DeviceStep
}

// metaCacheLimit bounds the meta runs kept: a forecast sweep or a
// validation revisits few distinct configurations, and a run's record of
// events is small.
const metaCacheLimit = 256

// metaCache holds the meta runs made so far, so that many forecasts of few
// distinct configurations run each one once. Runs are keyed on the whole
// configuration (with its defaults filled) and the fingerprint of the op
// order; when full, the oldest run is dropped first.
var metaCache struct {
	sync.Mutex
	runs  map[string]*metaStep
	order []string // keys, oldest first
}

// PeakMemory returns each device's peak bytes by category in one training
// step of cfg, exactly as a measured run accounts them: cfg runs one
// warm-up and one measured step on the meta backend. cfg.Bounds, when set,
// fixes the partition; otherwise cfg's balance decides it ("time" then
// measures meta blocks, which is meaningless: set Bounds).
func PeakMemory(ctx context.Context, cfg config.Config) ([]tensor.MemStats, error) {
	ms, err := metaRun(ctx, cfg.WithDefaults())
	if err != nil {
		return nil, err
	}
	return ms.memory(), nil
}

// memory returns each device's peak bytes by category in the step.
func (ms *metaStep) memory() []tensor.MemStats {
	out := make([]tensor.MemStats, len(ms.devices))
	for d, ds := range ms.devices {
		out[d] = ds.Memory
	}
	return out
}

// metaRun returns the meta step of cfg, from the cache when it ran before.
func metaRun(ctx context.Context, cfg config.Config) (*metaStep, error) {
	return cachedMetaRun(ctx, cfg, 0, nil)
}

// cachedMetaRun is metaRun with the ops gated by gate (nil for none),
// cached under order, which identifies the gate's order (0 for free
// running). cfg comes normalised (config.Config.WithDefaults).
func cachedMetaRun(ctx context.Context, cfg config.Config, order uint64, gate func(ctx context.Context, device, op int) error) (*metaStep, error) {
	// The backend and the data set do not change what a meta step
	// allocates or moves (MetaStep replaces both).
	cfg.Backend, cfg.Dataset = "", ""
	cfg.Straggler, cfg.Fail = config.Straggler{}, nil // MetaStep drops them too
	key := fmt.Sprintf("%#v order %d", cfg, order)
	metaCache.Lock()
	ms, ok := metaCache.runs[key]
	metaCache.Unlock()
	if ok {
		return ms, nil
	}
	devs, err := runner.MetaStep(ctx, cfg, gate)
	if err != nil {
		return nil, err
	}
	ms = &metaStep{devices: devs}
	metaCache.Lock()
	defer metaCache.Unlock()
	if metaCache.runs == nil {
		metaCache.runs = map[string]*metaStep{}
	}
	if _, ok := metaCache.runs[key]; !ok {
		if len(metaCache.order) >= metaCacheLimit {
			delete(metaCache.runs, metaCache.order[0])
			metaCache.order = metaCache.order[1:]
		}
		metaCache.order = append(metaCache.order, key)
	}
	metaCache.runs[key] = ms
	return ms, nil
}
