package predictor

import (
	"errors"
	"fmt"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
)

// ErrNoSpeeds is DeviceSpeeds's error when the data holds no runs at a
// device's thread count: nothing measured says how fast it computes.
var ErrNoSpeeds = errors.New("no runs measured at that thread count")

// DeviceSpeeds returns the speeds of cfg's pipeline devices where their
// threads differ (config.Config.DeviceThreads), as the runner measures
// them (runner.DeviceSpeeds) but from the fitted cost models: each
// device's speed is the model's fitted block times (forward and
// backward at the micro-batch size, summed) on a device of cfg.Threads
// threads, the reference, over the same on a device of its own threads.
// fits are the cost models by key (Fit's); the reference's and each
// thread count's must be among them, or it returns ErrNoSpeeds naming
// the runs to measure. Devices alike return nil.
func DeviceSpeeds(fits map[Key]*CostModel, cfg config.Config) ([]float64, error) {
	cfg = cfg.WithDefaults()
	if len(cfg.DeviceThreads) == 0 {
		return nil, nil
	}
	model, err := models.Describe(cfg.Model, cfg.ModelConfig)
	if err != nil {
		return nil, err
	}
	mb, seq := cfg.MicroBatchSize(), model.Config.Seq
	work := func(threads int) (float64, error) {
		c := cfg
		c.Threads, c.DeviceThreads = threads, nil
		fit := fits[configKey(c, model.Config.Record())]
		if fit == nil {
			return 0, fmt.Errorf("device speeds of threads %s: %w: %s on %d thread(s) (profile --devices 1 --threads %d measures it)",
				profiler.FormatThreads(cfg.DeviceThreads), ErrNoSpeeds, cfg.Model, threads, threads)
		}
		total := 0.0
		for i := range model.Blocks {
			for _, ph := range []Phase{PhaseForward, PhaseBackward} {
				t, err := fit.Block(i, ph, mb, seq)
				if err != nil {
					return 0, err
				}
				total += t
			}
		}
		return total, nil
	}
	ref, err := work(cfg.Threads)
	if err != nil {
		return nil, err
	}
	speeds := make([]float64, len(cfg.DeviceThreads))
	for k, n := range cfg.DeviceThreads {
		t, err := work(n)
		if err != nil {
			return nil, err
		}
		speeds[k] = ref / t
	}
	return speeds, nil
}
