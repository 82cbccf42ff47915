package runner

import (
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// TestStragglerSlowsItsComputeByItsFactor runs gpipe at K = 2 with device
// 1 a straggler of factor 3 and checks that in every measured step its
// compute ops together take 3 times as long as their median durations
// in the warm-up steps after the first (within a sleep's granularity), and that the
// straggler changes no loss.
func TestStragglerSlowsItsComputeByItsFactor(t *testing.T) {
	ctx := watch(t, time.Minute)
	const factor = 3
	cfg := config.Config{
		Model: "mlp", ModelConfig: models.Config{Sizes: []int{256, 512, 512, 512, 10}},
		Batch: 64, Seed: 5, Threads: 1,
		Schedule: schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2},
	}
	opts := RunOptions{Warmup: 4, Steps: 5}
	plain, err := Run(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Straggler = config.Straggler{Device: 1, Factor: factor}
	slow, err := Run(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range slow.Steps {
		if a, b := plain.Steps[i].Loss, slow.Steps[i].Loss; a != b {
			t.Errorf("step %d: loss %v with the straggler, %v without", slow.Steps[i].Step, b, a)
		}
	}
	// unslowed[i] is device 1's op i's median warm-up duration.
	var took [][]int64
	for _, s := range slow.Warmup[1:] {
		for i, e := range s.Devices[1].Events {
			if i == len(took) {
				took = append(took, nil)
			}
			took[i] = append(took[i], e.EndNanos-e.StartNanos)
		}
	}
	unslowed := make([]int64, len(took))
	for i, ds := range took {
		unslowed[i] = medianNanos(ds)
	}
	var ratios []float64
	for _, s := range slow.Steps {
		var compute, want int64
		for i, e := range s.Devices[1].Events {
			op, err := schedule.ParseOpKind(e.Op)
			if err != nil {
				t.Fatal(err)
			}
			if !op.Computes() {
				continue
			}
			compute += e.EndNanos - e.StartNanos
			want += factor * unslowed[i]
		}
		ratio := float64(compute) / float64(want)
		t.Logf("step %d: device 1 computed %.2f ms, %.3f × %d × its warm-up %.2f ms", s.Step, float64(compute)/1e6, ratio, factor, float64(want)/factor/1e6)
		ratios = append(ratios, ratio)
	}
	// One step on a loaded machine can stray either way (a sleep wakes
	// late; the warm-up the test measures ran slower than the runner's
	// own measure of it): the median step must be on target.
	if r := profiler.Median(ratios); r < 0.9 || r > 1.3 {
		t.Errorf("device 1's compute took a median %.2f times %d × its unslowed duration, want 1 (0.9–1.3)", r, factor)
	}
}
