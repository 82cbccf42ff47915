package predictor

import (
	"context"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// TestPredictTakesTheRecordsOptimizer checks that a forecast trains with
// the optimizer of the runs it was fitted to, not its model's default:
// runs of a small GPT-2 trained by SGD (whose records name no optimizer)
// and by AdamW fit two cost models, and each forecasts, for a
// configuration that names none, its own optimizer's state (one slot of
// 4 bytes a parameter, or two), while one that names the other is
// refused.
func TestPredictTakesTheRecordsOptimizer(t *testing.T) {
	base := config.Config{Model: "gpt2", ModelConfig: models.Config{Width: 0.125, Seq: 16, Vocab: 64, Layers: 2}, Batch: 4,
		Schedule: schedule.Options{Name: schedule.Single, Devices: 1, Micro: 2}, Threads: 1}
	var recs []profiler.Record
	for _, name := range []string{"sgd", "adamw"} {
		cfg := base
		cfg.Optimizer = name
		res, err := runner.Run(context.Background(), cfg, runner.RunOptions{Warmup: 1, Steps: 2, BlockTiming: true, Calibrate: true})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, res.Record())
	}
	if recs[0].Config.Optimizer != "" {
		t.Fatalf("an SGD record names optimizer %q, want none", recs[0].Config.Optimizer)
	}
	fits, err := Fit(recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(fits) != 2 {
		t.Fatalf("%d cost models, want one for each optimizer", len(fits))
	}
	for i, tc := range []struct {
		optimizer, other string
		slots            int64
	}{{"sgd", "adamw", 1}, {"adamw", "sgd", 2}} {
		key := KeyOf(&recs[i])
		if s := DataSweep(recs, key); s.Optimizer != tc.optimizer {
			t.Errorf("%s: the data's sweep trains with %q", tc.optimizer, s.Optimizer)
		}
		pc := base
		pc.Schedule = schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2}
		rec, err := Predict(context.Background(), fits[key], pc)
		if err != nil {
			t.Fatalf("%s: %v", tc.optimizer, err)
		}
		if got := rec.Config.OptimizerRecord; got.Optimizer != KeyOptimizer(tc.optimizer) {
			t.Errorf("%s: the forecast trains with %q", tc.optimizer, got.Optimizer)
		}
		for _, d := range rec.Devices {
			opt, grad := d.PeakBytesByCategory[tensor.Optimizer.String()], d.PeakBytesByCategory[tensor.Gradients.String()]
			if grad == 0 || opt != tc.slots*grad {
				t.Errorf("%s device %d: %d optimizer bytes, want %d × the %d gradient bytes", tc.optimizer, d.Index, opt, tc.slots, grad)
			}
		}
		pc.Optimizer = tc.other
		if _, err := Predict(context.Background(), fits[key], pc); err == nil || !strings.Contains(err.Error(), "the cost model describes") {
			t.Errorf("%s's cost model forecast a run trained by %s: %v", tc.optimizer, tc.other, err)
		}
	}
}
