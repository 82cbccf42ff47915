package runner

import (
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// adamwConfig is the mlp trained with AdamW at torch's defaults.
func adamwConfig(o schedule.Options) config.Config {
	return config.Config{
		Model: "mlp", ModelConfig: models.Config{Sizes: []int{48, 32, 32, 32, 5}}, Batch: 24, Seed: 7,
		Optimizer: "adamw", AdamW: tensor.DefaultAdamW(), Threads: 1, Schedule: o,
	}
}

// TestEquivalenceAdamW checks that every schedule trains with AdamW the
// weights single-device AdamW trains, to round-off. Its moments and
// bias corrections are per parameter: interleaved, which updates a
// device's stages one after the other, must count each parameter's
// steps once a step as single does (counted per call, its second
// stage's bias corrections would be a step ahead and its weights off by
// about lr).
func TestEquivalenceAdamW(t *testing.T) {
	ctx := watch(t, 2*time.Minute)
	const k, m = 2, 4
	ref := train(t, ctx, adamwConfig(schedule.Options{Name: schedule.Single, Devices: 1, Micro: 1}), equivalenceSteps)
	worst := 0.0
	for _, o := range pipelines(k, m) {
		got := train(t, ctx, adamwConfig(o), equivalenceSteps)
		d, where := relDiff(got.params, ref.params)
		worst = max(worst, d)
		if d > equivalenceTol {
			t.Errorf("%s: weights differ from single M=1 by %.3g (in %s)", got.name, d, where)
		}
		if dl := lossDiff(got.losses, ref.losses); dl > equivalenceTol {
			t.Errorf("%s: losses %v, single's %v", got.name, got.losses, ref.losses)
		}
	}
	t.Logf("AdamW, %d pipelined runs of %d steps (K=%d M=%d): worst weight difference %.3g from single",
		len(pipelines(k, m)), equivalenceSteps, k, m, worst)
}

// TestMetaStepAdamWMemory checks that a forecast's memory (MetaStep, the
// step replayed on the meta backend) holds AdamW's two moments per
// parameter as optimizer memory, twice the weights' bytes on every
// device, where SGD's momentum holds once them.
func TestMetaStepAdamWMemory(t *testing.T) {
	ctx := watch(t, time.Minute)
	o := schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 4}
	for _, tc := range []struct {
		optimizer string
		slots     int64
	}{{"adamw", 2}, {"sgd", 1}} {
		cfg := adamwConfig(o)
		cfg.Optimizer = tc.optimizer
		devs, err := MetaStep(ctx, cfg.WithDefaults(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for d, ds := range devs {
			weights, opt := ds.Memory.PeakBytes[tensor.Weights], ds.Memory.PeakBytes[tensor.Optimizer]
			if weights == 0 || opt != tc.slots*weights {
				t.Errorf("%s, device %d: %d optimizer bytes at peak, want %d × the %d weight bytes", tc.optimizer, d, opt, tc.slots, weights)
			}
		}
	}
}
