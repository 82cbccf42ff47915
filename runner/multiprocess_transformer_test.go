package runner

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/runner/comm"
)

// multiprocessTransformers is the transformer workload of the
// multi-process tests, in-process (TestMultiProcessTransformers) and
// over MPI (TestMPITransformers): both families at TestEquivalenceTransformers'
// sizes but with two decoder layers, four blocks, one for each of
// interleaved's four stages at K = 2 (GPT-2's tied embedding and LM head
// then always fall on different ranks). The schedules run M = 4; the
// floor of single-device training's own spread comes from M = 2 and 4,
// as TestEquivalenceTransformers' without -short: with M = 4's order
// alone the margin was thinner (GPT-2 with AdamW: worst 0.63 of what is
// allowed, against 0.26).
var multiprocessTransformers = struct {
	models, optimizers []string
	mc                 models.Config
	batch, micro       int
	floor              []int
}{
	models:     []string{"gpt2", "tinyllama-1.1b"},
	optimizers: []string{"sgd", "adamw"},
	mc:         models.Config{Seq: 8, Vocab: 64, Layers: 2, Width: 1.0 / 16, NoDropout: true},
	batch:      24,
	micro:      4,
	floor:      []int{2, 4},
}

// TestMultiProcessTransformers runs both transformer families under
// every schedule as two processes (goroutines over the in-process
// transport's groups, the path an MPI run takes but its transport) and
// checks them against single-device training, as TestMPITransformers
// does over MPI: each rank builds its own stages, GPT-2's embedding and
// LM head on different ranks, their gradients summed by the all-reduce.
//
// Under -short it runs GPT-2 with AdamW alone: the tie across ranks and
// the transformers' default optimizer.
func TestMultiProcessTransformers(t *testing.T) {
	w := multiprocessTransformers
	if testing.Short() {
		w.models, w.optimizers = w.models[:1], []string{"adamw"}
	}
	for _, model := range w.models {
		for _, opt := range w.optimizers {
			t.Run(model+"/"+opt, func(t *testing.T) {
				ctx := watch(t, 5*time.Minute)
				base := config.Config{Model: model, ModelConfig: w.mc, Batch: w.batch, Seed: 7, Optimizer: opt, Threads: 1}
				ref := newSingleReference(t, ctx, base, w.floor)
				opts := RunOptions{Warmup: 1, Steps: equivalenceSteps - 1, Weights: true}
				worst := 0.0
				for _, o := range pipelines(2, w.micro) {
					cfg := base
					cfg.Schedule = o
					name := describe(cfg)
					res, err := runGroups(ctx, cfg, opts, comm.NewInProcessGroups(2))
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					var names []string
					for _, r := range res {
						worst = math.Max(worst, ref.checkWeights(t, name, r.Weights))
						for n := range r.Weights {
							names = append(names, n)
						}
					}
					slices.Sort(names)
					ref.checkNames(t, name, names)
					ref.checkLosses(t, name, stepLosses(res[0]))
				}
				t.Logf("%d schedules at K 2, M %d: worst difference %.2f of what is allowed", len(pipelines(2, w.micro)), w.micro, worst)
			})
		}
	}
}
