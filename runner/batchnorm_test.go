package runner

import (
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// bnConfig is a small resnet50: every block has BatchNorm, so batch
// statistics depend on how a step splits its mini-batch.
func bnConfig(o schedule.Options) config.Config {
	return config.Config{
		Model: "resnet50", ModelConfig: models.Config{Width: 1.0 / 16, Image: 32, Classes: 5},
		Batch: 24, Seed: 11, SGD: config.DefaultSGD(), Threads: 1, Schedule: o,
	}
}

// checkSame fails the test unless got's weights, running statistics and
// num_batches_tracked equal want's.
func checkSame(t *testing.T, got, want trained) (dParams, dBuffers float64) {
	t.Helper()
	dParams, whereP := relDiff(got.params, want.params)
	dBuffers, whereB := relDiff(got.buffers, want.buffers)
	if dParams > equivalenceTol {
		t.Errorf("%s: weights differ from %s by %.3g (in %s)", got.name, want.name, dParams, whereP)
	}
	if dBuffers > equivalenceTol {
		t.Errorf("%s: running statistics differ from %s by %.3g (in %s)", got.name, want.name, dBuffers, whereB)
	}
	checkCounts(t, got, want)
	return dParams, dBuffers
}

// TestEquivalenceWithBatchNorm checks the schedules against single with
// the same split of the mini-batch: gpipe, 1f1b, interleaved and the
// zero-bubble schedules compute BatchNorm's
// statistics per micro-batch as single with the same M does; coop does in
// training, but its prediction step uses per-shard statistics, so it
// equals single only when slices are shards (M = K). Other coop
// configurations' differences are measured and logged.
//
// This small resnet is chaotic at the level of float32 round-off: a
// perturbation below one ulp of the weights (single with its weight decay
// changed by 1e-5 relative) moves BatchNorm biases by ~1e-4 relative after
// three steps, ~1e-1 after 1e-4 relative (logged below). So a run whose
// ops are ordered as single's (1f1b, interleaved, zb-h1, zb-h2, coop with
// M = K) must match single
// after three steps, while gpipe, which sums micro-batch gradients in the
// reverse order, is compared with single after one step (round-off only)
// and after three steps with itself across checkpoint modes (recomputation
// must reproduce the kept forward exactly); its three-step difference from
// single is logged. num_batches_tracked is compared exactly everywhere.
func TestEquivalenceWithBatchNorm(t *testing.T) {
	ctx := watch(t, 5*time.Minute)
	ks, ms := []int{2, 3, 4}, []int{1, 2, 4}
	if testing.Short() {
		ks, ms = []int{2, 4}, []int{2, 4}
	}
	singles := map[[2]int]trained{} // by (M, steps)
	single := func(m, steps int) trained {
		key := [2]int{m, steps}
		if _, ok := singles[key]; !ok {
			singles[key] = train(t, ctx, bnConfig(schedule.Options{Name: schedule.Single, Devices: 1, Micro: m}), steps)
			if want := int64(steps * m); singles[key].counts["bn1.num_batches_tracked"] != want {
				t.Errorf("single M=%d: bn1.num_batches_tracked = %d after %d steps, want %d (one per micro-batch forward)",
					m, singles[key].counts["bn1.num_batches_tracked"], steps, want)
			}
		}
		return singles[key]
	}
	{
		// The sensitivity the comment above quotes.
		c := bnConfig(schedule.Options{Name: schedule.Single, Devices: 1, Micro: 2})
		c.SGD.WeightDecay *= 1 + 1e-5
		got := train(t, ctx, c, equivalenceSteps)
		p, _ := relDiff(got.params, single(2, equivalenceSteps).params)
		t.Logf("sensitivity: single M=2 with weight decay ×(1+1e-5) differs from single M=2 by %.3g after %d steps", p, equivalenceSteps)
	}
	var worstP, worstB, worstGP1, worstGB1, worstGP3, worstGB3, worstCk float64
	for _, k := range ks {
		for _, m := range ms {
			var never trained
			for _, o := range pipelines(k, m) {
				switch o.Name {
				case schedule.Coop:
					continue
				case schedule.OneF1B, schedule.Interleaved, schedule.ZBH1, schedule.ZBH2, schedule.ZBV, schedule.DualPipeV:
					// Each accumulates every stage's micro-batch
					// gradients in single's order.
					p, b := checkSame(t, train(t, ctx, bnConfig(o), equivalenceSteps), single(m, equivalenceSteps))
					worstP, worstB = max(worstP, p), max(worstB, b)
					continue
				}
				p, b := checkSame(t, train(t, ctx, bnConfig(o), 1), single(m, 1))
				worstGP1, worstGB1 = max(worstGP1, p), max(worstGB1, b)
				got := train(t, ctx, bnConfig(o), equivalenceSteps)
				want := single(m, equivalenceSteps)
				p, _ = relDiff(got.params, want.params)
				b, _ = relDiff(got.buffers, want.buffers)
				worstGP3, worstGB3 = max(worstGP3, p), max(worstGB3, b)
				if o.Checkpoint == schedule.Never {
					never = got
					checkCounts(t, got, want)
					continue
				}
				p, b = checkSame(t, got, never)
				worstCk = max(worstCk, p, b)
			}
		}
		// coop with M = K: slices are shards, so prediction and training
		// see the same batch statistics.
		for _, d := range []int{1, k} {
			got := train(t, ctx, bnConfig(schedule.Options{Name: schedule.Coop, Devices: k, Micro: k, Prefetch: d}), equivalenceSteps)
			p, b := checkSame(t, got, single(k, equivalenceSteps))
			worstP, worstB = max(worstP, p), max(worstB, b)
		}
		for _, m := range ms {
			if m == k {
				continue
			}
			got := train(t, ctx, bnConfig(schedule.Options{Name: schedule.Coop, Devices: k, Micro: m, Prefetch: 1}), equivalenceSteps)
			want := single(m, equivalenceSteps)
			p, _ := relDiff(got.params, want.params)
			b, _ := relDiff(got.buffers, want.buffers)
			t.Logf("%s vs single M=%d (not asserted: shards of %d predict, slices of %d train): weights differ by %.3g, running statistics by %.3g",
				got.name, m, 24/k, 24/m, p, b)
		}
	}
	t.Logf("K %v, M %v: 1f1b, interleaved, zb-h1, zb-h2 and coop (M = K) vs single with the same M after %d steps: worst weights %.3g, running statistics %.3g",
		ks, ms, equivalenceSteps, worstP, worstB)
	t.Logf("gpipe vs single with the same M after 1 step: worst weights %.3g, running statistics %.3g; after %d steps (not asserted): %.3g, %.3g",
		worstGP1, worstGB1, equivalenceSteps, worstGP3, worstGB3)
	t.Logf("gpipe except-last and always vs never after %d steps: worst %.3g", equivalenceSteps, worstCk)
}

// checkCounts fails the test unless got's num_batches_tracked counters
// equal want's.
func checkCounts(t *testing.T, got, want trained) {
	t.Helper()
	if len(got.counts) != len(want.counts) || len(want.counts) == 0 {
		t.Errorf("%s: %d num_batches_tracked counters, %s has %d", got.name, len(got.counts), want.name, len(want.counts))
	}
	for n, c := range want.counts {
		if got.counts[n] != c {
			t.Errorf("%s: %s = %d, %s has %d", got.name, n, got.counts[n], want.name, c)
			return
		}
	}
}

// TestReplicasKeepNoStatistics checks that coop's prediction step, which
// runs every stage but the last on every device (replicas elsewhere, the
// own stage with frozen statistics), never updates running statistics:
// replicas' buffers and counters stay as placed, and each own stage's
// counter counts its training forwards only.
func TestReplicasKeepNoStatistics(t *testing.T) {
	ctx := watch(t, 2*time.Minute)
	const k, m, steps = 3, 3, 2
	tr := testTrainer(t, bnConfig(schedule.Options{Name: schedule.Coop, Devices: k, Micro: m, Prefetch: 1}))
	type snap struct {
		values map[string][]float32
		counts map[string]int64
	}
	take := func() [][]snap {
		out := make([][]snap, k)
		for d, w := range tr.workers {
			out[d] = make([]snap, k)
			for s, r := range w.replicas {
				if r == nil {
					continue
				}
				sn := snap{values: map[string][]float32{}, counts: map[string]int64{}}
				for _, b := range models.Buffers(r) {
					if b.Buffer.Value != nil {
						sn.values[b.Name] = tensor.ToHost(b.Buffer.Value)
					}
					if b.Buffer.Count != nil {
						sn.counts[b.Name] = *b.Buffer.Count
					}
				}
				out[d][s] = sn
			}
		}
		return out
	}
	before := take()
	replicas := 0
	for i := 0; i < steps; i++ {
		if _, err := tr.Step(ctx); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	after := take()
	for d := range k {
		for s := range k {
			if tr.workers[d].replicas[s] == nil {
				continue
			}
			replicas++
			if len(before[d][s].values) == 0 {
				t.Errorf("device %d: replica of stage %d has no buffers to check", d, s)
			}
			if diff, where := relDiff(after[d][s].values, before[d][s].values); diff != 0 {
				t.Errorf("device %d: replica of stage %d: running statistics changed by %.3g (in %s)", d, s, diff, where)
			}
			for n, c := range before[d][s].counts {
				if after[d][s].counts[n] != c {
					t.Errorf("device %d: replica of stage %d: %s.num_batches_tracked %d → %d", d, s, n, c, after[d][s].counts[n])
				}
			}
		}
	}
	if replicas != (k-1)*(k-1) {
		t.Errorf("%d replicas, want %d (stages 0..K−2 on every device but their owner)", replicas, (k-1)*(k-1))
	}
	for n, c := range batchCounts(tr) {
		if c != int64(steps*m) {
			t.Errorf("own stage: %s.num_batches_tracked = %d after %d steps of %d slices, want %d", n, c, steps, m, steps*m)
		}
	}
	t.Logf("coop K=%d M=%d: %d replicas unchanged over %d steps; own stages counted %d training forwards each", k, m, replicas, steps, steps*m)
}
