//go:build cudaemu

package emu

import (
	"context"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// TestTrainsLikeTheCPU trains a small mlp for two steps of GPipe on two
// emulated GPUs and on the CPU backend: the losses and weights must
// agree to float32 rounding.
func TestTrainsLikeTheCPU(t *testing.T) {
	// relTol: two steps of float32 kernels that sum in other orders (and
	// the CPU's fused multiply-adds) differ by some ulps of each value.
	const relTol = 1e-4
	run := func(backend string) *runner.Result {
		cfg := config.Config{
			Model: "mlp", ModelConfig: models.Config{Sizes: []int{48, 32, 32, 5}}, Batch: 8, Seed: 7,
			Schedule: schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2},
			Backend:  backend, Threads: 1, SGD: config.DefaultSGD(),
		}
		return train(t, cfg, 0, 2, time.Minute)
	}
	emu, cpu := run(BackendName), run(tensor.CPUBackend)
	for i := range cpu.Steps {
		got, want := emu.Steps[i].Loss, cpu.Steps[i].Loss
		if math.Abs(got-want) > relTol*math.Abs(want) || math.IsNaN(got) {
			t.Errorf("step %d: loss %v on the emulator, %v on the CPU", i, got, want)
		}
	}
	names := make([]string, 0, len(cpu.Weights))
	for n := range cpu.Weights {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(emu.Weights) != len(cpu.Weights) {
		t.Fatalf("%d weight tensors on the emulator, %d on the CPU", len(emu.Weights), len(cpu.Weights))
	}
	for _, n := range names {
		got, want := emu.Weights[n], cpu.Weights[n]
		if len(got) != len(want) {
			t.Errorf("%s: %d weights on the emulator, %d on the CPU", n, len(got), len(want))
			continue
		}
		if d, _ := weightDiff(got, want); !(d <= relTol) {
			t.Errorf("%s: weights differ by %.3g of their largest", n, d)
		}
	}
	if g := emu.GPUs; len(g) != 2 || g[0] == nil || g[0].Model != "pipecast CUDA emulator" {
		t.Errorf("the run records GPUs %v, want the emulator's twice", g)
	}
}

// train runs cfg for warmup and steps steps and keeps the trained weights.
func train(t *testing.T, cfg config.Config, warmup, steps int, limit time.Duration) *runner.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := runner.Run(ctx, cfg, runner.RunOptions{Warmup: warmup, Steps: steps, Weights: true})
	if err != nil {
		t.Fatalf("%s on %s: %v", cfg, cfg.Backend, err)
	}
	return res
}

// weightDiff returns the largest difference between two tensors relative
// to want's largest magnitude, and where it is (NaN, or +Inf for tensors
// of different sizes, compare as failures).
func weightDiff(got, want []float32) (float64, int) {
	if len(got) != len(want) {
		return math.Inf(1), 0
	}
	var diff, scale float64
	at := 0
	for i := range want {
		if d := math.Abs(float64(got[i]) - float64(want[i])); math.IsNaN(d) || d > diff {
			diff, at = d, i
		}
		scale = math.Max(scale, math.Abs(float64(want[i])))
	}
	return diff / scale, at
}

// stageEnds names the first and last parameter tensors of every stage of
// a run.
func stageEnds(t *testing.T, r *runner.Result) []string {
	t.Helper()
	var names []string
	for s := 0; s+1 < len(r.Partition); s++ {
		ps := models.Params(r.Model.Stage(r.Partition[s], r.Partition[s+1]))
		if len(ps) == 0 {
			t.Fatalf("stage %d (blocks %d..%d) has no parameters", s, r.Partition[s], r.Partition[s+1])
		}
		names = append(names, ps[0].Name, ps[len(ps)-1].Name)
	}
	return names
}
