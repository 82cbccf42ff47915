package predictor

import (
	"context"
	"slices"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// TestPlanMemoryFullSize checks a plan's memory of decoder transformers
// at full size, from the replay the plan itself makes (Plan without
// costs): on every device of every schedule, the weight, gradient and
// optimizer bytes are 4 bytes times the parameters of the blocks its
// stages hold (counted here from the model's blocks at the partition the
// configuration balances) times 1, 1 and the optimizer's slots (AdamW's
// two moments, SGD's momentum), coop's weights with the replicas of the
// other stages its prediction step runs. The first device holds the token
// embedding and the last the LM head; GPT-2 ties the two, so both hold
// its [V, D] matrix. A meta step allocates no data, so a 7-billion
// parameter model replays in a fraction of a second.
func TestPlanMemoryFullSize(t *testing.T) {
	tests := []struct {
		name      string
		model     string
		size      models.Config
		k, batch  int
		optimizer string // "": the model's own, AdamW
		slots     int64
		schedules []string // nil: every schedule
	}{
		{name: "llama2-7b K=8", model: "llama2-7b", size: models.Config{Seq: 4096}, k: 8, batch: 8, slots: 2},
		{name: "gpt2-xl K=4", model: "gpt2-xl", k: 4, batch: 8, slots: 2},
		{name: "llama2-7b K=8 sgd", model: "llama2-7b", size: models.Config{Seq: 4096}, k: 8, batch: 8,
			optimizer: "sgd", slots: 1, schedules: []string{schedule.GPipe, schedule.OneF1B}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := config.Config{Model: tc.model, ModelConfig: tc.size, Batch: tc.batch,
				Schedule: schedule.Options{Devices: tc.k}, Balance: config.BalanceMACs, Threads: 1, Optimizer: tc.optimizer}
			cfgs, _, err := PlanSpace{Base: base, Micro: []int{tc.k}, Schedules: tc.schedules}.Configs()
			if err != nil {
				t.Fatal(err)
			}
			rows, failed, err := Plan(context.Background(), nil, cfgs, 1)
			if err != nil || len(failed) > 0 {
				t.Fatalf("plan: %v, failed %v", err, failed)
			}
			if len(rows) < 2 {
				t.Fatalf("%d rows", len(rows))
			}
			model, err := models.Describe(tc.model, tc.size)
			if err != nil {
				t.Fatal(err)
			}
			embedding := int64(model.Config.Vocab) * int64(model.Blocks[0].Out[len(model.Blocks[0].Out)-1])
			for _, r := range rows {
				cfg := r.Config
				if want := tc.optimizer; want != "" && cfg.Optimizer != want || want == "" && cfg.Optimizer != "adamw" {
					t.Fatalf("%s: optimizer %q", cfg, cfg.Optimizer)
				}
				bounds, err := cfg.Partition(model, cfg.Stages(), nil)
				if err != nil {
					t.Fatal(err)
				}
				prog, err := cfg.Program(model, bounds)
				if err != nil {
					t.Fatal(err)
				}
				for d, m := range r.Memory {
					var blocks []int
					var children []models.Child
					for _, s := range prog.StagesOf(d) {
						for b := bounds[s]; b < bounds[s+1]; b++ {
							blocks = append(blocks, b)
							children = append(children, models.Child{Layer: model.Blocks[b].Layer})
						}
					}
					params := int64(models.ParamCount(models.NewSequential(children...)))
					// Coop's devices also hold replicas of the weights of
					// every stage but the last that they do not own, for
					// the prediction step.
					var replicas []models.Child
					if cfg.Schedule.Name == schedule.Coop {
						for s := range cfg.Stages() - 1 {
							if prog.Owners[s] != d {
								for b := bounds[s]; b < bounds[s+1]; b++ {
									replicas = append(replicas, models.Child{Layer: model.Blocks[b].Layer})
								}
							}
						}
					}
					replicaParams := int64(models.ParamCount(models.NewSequential(replicas...)))
					for c, n := range map[tensor.Category]int64{tensor.Weights: params + replicaParams,
						tensor.Gradients: params, tensor.Optimizer: tc.slots * params} {
						if got, want := m.PeakBytes[c], 4*n; got != want {
							t.Errorf("%s device %d: %s %d bytes, want 4 × %d = %d (%d params, %d in replicas, %d slots)",
								cfg, d, c, got, n, want, params, replicaParams, tc.slots)
						}
					}
					if h := r.Holdings[d]; h.Params != params || !slices.Equal(h.Blocks, blocks) || h.ReplicaParams != replicaParams {
						t.Errorf("%s device %d: holds blocks %v of %d params and %d in replicas, want %v of %d and %d",
							cfg, d, h.Blocks, h.Params, h.ReplicaParams, blocks, params, replicaParams)
					}
					// The first stage's device holds the embedding, the
					// last stage's the LM head: more than the others.
					first, last := slices.Contains(blocks, 0), slices.Contains(blocks, len(model.Blocks)-1)
					if (first || last) && cfg.Schedule.Name != schedule.Coop && params < embedding {
						t.Errorf("%s device %d: %d params, fewer than the %d of the [V, D] matrix it holds", cfg, d, params, embedding)
					}
				}
				if t.Failed() {
					return // one configuration's errors say it
				}
			}
			t.Logf("%d configurations; %s device 0: %d weight, %d gradient, %d optimizer bytes", len(rows), rows[0].Config,
				rows[0].Memory[0].PeakBytes[tensor.Weights], rows[0].Memory[0].PeakBytes[tensor.Gradients], rows[0].Memory[0].PeakBytes[tensor.Optimizer])
		})
	}
}
