package runner

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// replicaPipelines returns what the replica tests run: R replicas of
// single (pure data parallelism), and of every pipeline schedule on K
// devices with M micro-batches.
func replicaPipelines(r, k, m int) []schedule.Options {
	var out []schedule.Options
	if k == 1 {
		out = append(out, schedule.Options{Name: schedule.Single, Devices: 1, Micro: m})
	}
	out = append(out, pipelines(k, m)...)
	for i := range out {
		out[i].Replicas = r
	}
	return out
}

// TestReplicasEquivalence checks that R data-parallel replicas of a
// pipeline, each on B samples, train the weights single-device training
// on the step's R·B samples gives, to float32 round-off: without batch
// norm every gradient is a sum over samples, which the replicas' sum
// completes. Replicas must also end bit for bit alike, since they sum
// the same gradients in the same order.
func TestReplicasEquivalence(t *testing.T) {
	type shape struct{ r, k, m int }
	shapes := []shape{{2, 1, 1}, {2, 1, 4}, {3, 1, 2}, {2, 2, 2}, {2, 2, 4}, {2, 3, 2}}
	if testing.Short() {
		shapes = []shape{{2, 1, 2}, {3, 1, 2}, {2, 2, 4}}
	}
	tests := []struct {
		name  string
		model string
		mc    models.Config
		opt   string
		batch int // per replica
	}{
		{name: "mlp", model: "mlp", mc: models.Config{Sizes: []int{48, 32, 32, 32, 32, 32, 32, 32, 5}}, opt: "sgd", batch: 12},
		// Dropout stays on: masks depend on (seed, step, layer, sample),
		// and a replica's samples keep their place in the step's R·B.
		{name: "vgg16", model: "vgg16", mc: models.Config{Width: 1.0 / 16, Image: 32, Classes: 5}, opt: "sgd", batch: 12},
		// GPT-2 ties its embedding to its LM head across devices: the
		// tied sum and the replicas' sum both run.
		{name: "gpt2", model: "gpt2", mc: models.Config{Seq: 8, Vocab: 64, Layers: 6, Width: 1.0 / 16, NoDropout: true}, opt: "adamw", batch: 12},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := watch(t, 5*time.Minute)
			base := config.Config{Model: tc.model, ModelConfig: tc.mc, Batch: tc.batch, Seed: 7, Optimizer: tc.opt, Threads: 1}
			runs, worst := 0, 0.0
			refs := map[int]singleReference{}
			for _, sh := range shapes {
				ref, ok := refs[sh.r]
				if !ok {
					whole := base
					whole.Batch = sh.r * base.Batch
					// R replicas of M micro-batches sum what single
					// with R·M sums, grouped otherwise: its order
					// spread is part of the floor.
					ref = newSingleReference(t, ctx, whole, []int{2, 4, 2 * sh.r, 4 * sh.r})
					refs[sh.r] = ref
				}
				for _, o := range replicaPipelines(sh.r, sh.k, sh.m) {
					c := base
					c.Schedule = o
					if c.Validate() != nil {
						continue // coop's shards at K = 3 of B = 12 split; others may not
					}
					tr := testTrainer(t, c)
					name := describe(c)
					var losses []float64
					for i := range equivalenceSteps {
						s, err := tr.Step(ctx)
						if err != nil {
							t.Fatalf("%s: step %d: %v", name, i, err)
						}
						losses = append(losses, s.Loss)
					}
					runs++
					worst = math.Max(worst, ref.checkWeights(t, name, tr.Params()))
					ref.checkLosses(t, name, losses)
					checkReplicasAlike(t, name, tr)
				}
			}
			t.Logf("%d runs of replicas: worst difference %.2f of what is allowed", runs, worst)
		})
	}
}

// checkReplicasAlike checks that every replica's copy of every stage
// holds the same weights, bit for bit.
func checkReplicasAlike(t *testing.T, name string, tr *Trainer) {
	t.Helper()
	first := map[string][]float32{}
	for _, w := range tr.workers {
		for _, s := range w.owned {
			for _, p := range models.Params(w.stages[s]) {
				v := tensor.ToHost(p.Param.Value)
				if f, ok := first[p.Name]; !ok {
					first[p.Name] = v
				} else if !slices.Equal(f, v) {
					t.Errorf("%s: replica %d's %s differs from the first replica's", name, w.replica, p.Name)
				}
			}
		}
	}
}

// TestReplicasRecordTheirSums checks what a run of replicas records: one
// dp-allreduce event per stage and device, carrying the bytes it
// received (three replicas: the others' parts of its chunk of the
// stage's gradients and their summed chunks), and every job device's
// events under its own index.
func TestReplicasRecordTheirSums(t *testing.T) {
	ctx := watch(t, 2*time.Minute)
	c := config.Config{Model: "mlp", ModelConfig: models.Config{Sizes: []int{48, 32, 32, 5}}, Batch: 8, Seed: 7, Threads: 1,
		Schedule: schedule.Options{Name: schedule.OneF1B, Devices: 2, Micro: 2, Replicas: 3}}
	tr := testTrainer(t, c)
	res, err := tr.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Devices) != 6 {
		t.Fatalf("%d devices stepped, want R·K = 6", len(res.Devices))
	}
	for d, ds := range res.Devices {
		w := tr.workers[d]
		var sums int
		for _, e := range ds.Events {
			if e.Device != d {
				t.Errorf("device %d recorded an event of device %d", d, e.Device)
			}
			if e.Op != schedule.DPAllReduce.String() || e.Block != wholeOp {
				continue
			}
			sums++
			n := 0 // the stage's gradients, one bucket
			for _, p := range models.Params(w.stages[e.Stage]) {
				n += p.Param.Value.Len()
			}
			const r = 3
			chunk := (w.replica+1)*n/r - w.replica*n/r
			if want := int64((r-1)*chunk+n-chunk) * tensor.BytesPerElement; e.Bytes != want {
				t.Errorf("device %d: dp-allreduce of stage %d received %d bytes, want %d of %d elements", d, e.Stage, e.Bytes, want, n)
			}
		}
		if sums != 1 {
			t.Errorf("device %d: %d dp-allreduce events, want 1", d, sums)
		}
	}
}

// TestMultiProcessReplicas runs replicas as one process per device
// (goroutines over the in-process transport's groups, the path an MPI
// run takes): each replica's pipeline and each device's replicas talk
// over subsets of the job's ranks, and the run must train what the same
// run in one process trains, and record every job device.
func TestMultiProcessReplicas(t *testing.T) {
	ctx := watch(t, 5*time.Minute)
	for _, o := range []schedule.Options{
		{Name: schedule.Single, Devices: 1, Micro: 2, Replicas: 2},
		{Name: schedule.GPipe, Devices: 2, Micro: 2, Checkpoint: schedule.ExceptLast, Replicas: 2},
		{Name: schedule.Coop, Devices: 2, Micro: 2, Prefetch: 1, Replicas: 2},
		{Name: schedule.OneF1B, Devices: 2, Micro: 2, Replicas: 2},
		{Name: schedule.ZBV, Devices: 1, Micro: 2, Replicas: 3},
	} {
		cfg := config.Config{Model: "mlp", ModelConfig: models.Config{Width: 0.25}, Batch: 12, Seed: 3, Threads: 1, Schedule: o, Balance: config.BalanceMACs}
		name := cfg.String()
		opts := RunOptions{Warmup: 1, Steps: 2, Weights: true, BlockTiming: true}
		want, err := Run(ctx, cfg, opts)
		if err != nil {
			t.Fatalf("%s in one process: %v", name, err)
		}
		got, err := runGroups(ctx, cfg, opts, comm.NewInProcessGroups(cfg.JobDevices()))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkMultiProcess(t, name, want, got)
	}
}
