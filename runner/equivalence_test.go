package runner

import (
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

// equivalenceTol bounds the relative difference (max|a−b| / max|b| per
// tensor) between a pipelined run's weights and single's after a few
// steps. Every schedule computes the same float32 gradients up to the
// order in which micro-batches' contributions are summed, so weights agree
// to a few units of float32 round-off (≈1e-7) amplified by three momentum
// steps; 1e-5 leaves room for that and nothing more.
const equivalenceTol = 1e-5

// equivalenceSteps is how many SGD steps each run takes: enough for the
// momentum buffers and running statistics to carry history.
const equivalenceSteps = 3

// pipelines returns the pipelined schedules the equivalence tests run on
// K devices with M micro-batches: gpipe in every checkpoint mode, coop
// with look-ahead 1 and M, 1f1b, interleaved with 2 chunks per device,
// zb-h1, zb-h2, zb-v and dualpipev.
func pipelines(k, m int) []schedule.Options {
	out := []schedule.Options{
		{Name: schedule.GPipe, Devices: k, Micro: m, Checkpoint: schedule.Never},
		{Name: schedule.GPipe, Devices: k, Micro: m, Checkpoint: schedule.ExceptLast},
		{Name: schedule.GPipe, Devices: k, Micro: m, Checkpoint: schedule.Always},
		{Name: schedule.Coop, Devices: k, Micro: m, Prefetch: 1},
	}
	if m > 1 {
		out = append(out, schedule.Options{Name: schedule.Coop, Devices: k, Micro: m, Prefetch: m})
	}
	return append(out,
		schedule.Options{Name: schedule.OneF1B, Devices: k, Micro: m},
		schedule.Options{Name: schedule.Interleaved, Devices: k, Micro: m, Virtual: 2},
		schedule.Options{Name: schedule.ZBH1, Devices: k, Micro: m},
		schedule.Options{Name: schedule.ZBH2, Devices: k, Micro: m},
		schedule.Options{Name: schedule.ZBV, Devices: k, Micro: m},
		schedule.Options{Name: schedule.DualPipeV, Devices: k, Micro: m},
	)
}

// TestEquivalenceWithoutBatchNorm checks that, for networks without
// BatchNorm, every schedule trains exactly the weights single-device
// mini-batch SGD trains: with one micro-batch and with the same M.
func TestEquivalenceWithoutBatchNorm(t *testing.T) {
	// vgg16 is the slow half: under -short it runs K ∈ {2, 4} and M ∈
	// {1, 4} only (the mlp keeps the full sweep).
	vggKs, vggMs := []int{1, 2, 3, 4}, []int{1, 2, 4, 8}
	if testing.Short() {
		vggKs, vggMs = []int{2, 4}, []int{1, 4}
	}
	tests := []struct {
		name  string
		model string
		mc    models.Config
		batch int
		ks    []int
		ms    []int
	}{
		{
			// Eight layers, so that interleaved at K = 4 has a block
			// for each of its 8 stages.
			name: "mlp", model: "mlp", mc: models.Config{Sizes: []int{48, 32, 32, 32, 32, 32, 32, 32, 5}},
			batch: 24, ks: []int{1, 2, 3, 4}, ms: []int{1, 2, 4, 8},
		},
		{
			// Dropout stays on (p = 0.5 in the classifier): masks depend
			// only on (seed, step, layer, sample), so they must agree too.
			name: "vgg16", model: "vgg16", mc: models.Config{Width: 1.0 / 16, Image: 32, Classes: 5},
			batch: 24, ks: vggKs, ms: vggMs,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := watch(t, 5*time.Minute)
			base := config.Config{
				Model: tc.model, ModelConfig: tc.mc, Batch: tc.batch, Seed: 7,
				SGD: config.DefaultSGD(), Threads: 1,
			}
			at := func(o schedule.Options) config.Config {
				c := base
				c.Schedule = o
				return c
			}
			ref := train(t, ctx, at(schedule.Options{Name: schedule.Single, Devices: 1, Micro: 1}), equivalenceSteps)
			worstRef, worstSame, runs := 0.0, 0.0, 0
			for _, m := range tc.ms {
				same := train(t, ctx, at(schedule.Options{Name: schedule.Single, Devices: 1, Micro: m}), equivalenceSteps)
				if d, where := relDiff(same.params, ref.params); d > equivalenceTol {
					t.Errorf("%s: weights differ from single M=1 by %.3g (in %s)", same.name, d, where)
				}
				for _, k := range tc.ks {
					for _, o := range pipelines(k, m) {
						got := train(t, ctx, at(o), equivalenceSteps)
						runs++
						dRef, whereRef := relDiff(got.params, ref.params)
						dSame, whereSame := relDiff(got.params, same.params)
						worstRef, worstSame = max(worstRef, dRef), max(worstSame, dSame)
						if dRef > equivalenceTol {
							t.Errorf("%s: weights differ from single M=1 by %.3g (in %s)", got.name, dRef, whereRef)
						}
						if dSame > equivalenceTol {
							t.Errorf("%s: weights differ from single M=%d by %.3g (in %s)", got.name, m, dSame, whereSame)
						}
						if dl := lossDiff(got.losses, same.losses); dl > equivalenceTol {
							t.Errorf("%s: losses %v, single M=%d's %v", got.name, got.losses, m, same.losses)
						}
					}
				}
			}
			t.Logf("%d pipelined runs of %d steps (K %v, M %v, B %d): worst weight difference %.3g from single M=1, %.3g from single with the same M",
				runs, equivalenceSteps, tc.ks, tc.ms, tc.batch, worstRef, worstSame)
		})
	}
}

// lossDiff returns the largest relative difference between two runs'
// per-step losses.
func lossDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return 1
	}
	worst := 0.0
	for i := range a {
		d := a[i] - b[i]
		if d < 0 {
			d = -d
		}
		if s := max(b[i], -b[i]); s > 0 {
			d /= s
		}
		worst = max(worst, d)
	}
	return worst
}
