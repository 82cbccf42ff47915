package runner

import (
	"math"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

// roundOffFactor bounds how much farther a pipelined run's weights may
// lie from single-device training's than single-device runs that sum the
// same gradients in other orders (one micro-batch against the sweep's).
//
// A transformer has gradients that are sums with heavy cancellation: the
// key projection's bias gets exactly zero in exact arithmetic (a constant
// added to every key of a row leaves its softmax unchanged), and the
// query's bias a row-centred sum, so what float32 gives for them is
// round-off alone, and which round-off depends on the order of the sum.
// AdamW then normalises each element's gradient to a step of about its
// learning rate, so round-off in any small gradient moves a weight by a
// visible fraction of lr. The order-to-order spread of single-device
// training measures that floor per tensor; a schedule that loses or
// doubles a contribution (a micro-batch, the tied embedding's other
// half) moves weights by whole gradient steps, far beyond it.
const roundOffFactor = 4

// TestEquivalenceTransformers checks that every schedule trains both
// families of decoder transformers (GPT-2, with its embedding tied to its
// LM head across devices, and a Llama-style model with grouped-query
// attention and rotary positions) to the weights single-device training
// gives, with SGD and with AdamW: without dropout a transformer has no
// batch-dependent layer, so every schedule equals single with one
// micro-batch, to float32 round-off.
func TestEquivalenceTransformers(t *testing.T) {
	ks, ms := []int{1, 2, 3, 4}, []int{2, 4}
	if testing.Short() {
		ks, ms = []int{2, 4}, []int{4}
	}
	// Six decoder layers: eight blocks, one for each of interleaved's
	// eight stages at K = 4.
	mc := models.Config{Seq: 8, Vocab: 64, Layers: 6, Width: 1.0 / 16, NoDropout: true}
	for _, model := range []string{"gpt2", "tinyllama-1.1b"} {
		for _, opt := range []string{"sgd", "adamw"} {
			t.Run(model+"/"+opt, func(t *testing.T) {
				ctx := watch(t, 5*time.Minute)
				base := config.Config{Model: model, ModelConfig: mc, Batch: 24, Seed: 7, Optimizer: opt, Threads: 1}
				at := func(o schedule.Options) config.Config {
					c := base
					c.Schedule = o
					return c
				}
				ref := train(t, ctx, at(schedule.Options{Name: schedule.Single, Devices: 1, Micro: 1}), equivalenceSteps)
				// The floor: how far single-device training with the
				// sweep's micro-batch counts, which sums the same
				// gradients in other orders, lies from one micro-batch.
				floor := map[string]tensorDiff{}
				for _, micro := range ms {
					other := train(t, ctx, at(schedule.Options{Name: schedule.Single, Devices: 1, Micro: micro}), equivalenceSteps)
					for name, d := range tensorDiffs(other.params, ref.params) {
						d.abs = math.Max(d.abs, floor[name].abs)
						floor[name] = d
					}
				}
				m, err := models.Describe(model, mc)
				if err != nil {
					t.Fatal(err)
				}
				runs, worst := 0, 0.0
				for _, micro := range ms {
					for _, k := range ks {
						for _, o := range pipelines(k, micro) {
							got := train(t, ctx, at(o), equivalenceSteps)
							runs++
							want := withTiedCopies(ref.params, got.params, m.Ties())
							if len(got.params) != len(want) {
								t.Fatalf("%s: %d tensors, want %d", got.name, len(got.params), len(want))
							}
							for name, d := range tensorDiffs(got.params, want) {
								// Names of tied copies take their
								// first use's floor.
								f := floor[name]
								if _, ok := floor[name]; !ok {
									f = floor[tiedFirst(name, m.Ties())]
								}
								allowed := math.Max(equivalenceTol*d.scale, roundOffFactor*f.abs)
								worst = math.Max(worst, d.abs/math.Max(allowed, 1e-30))
								if d.abs > allowed {
									t.Errorf("%s: %s differs from single's by %.3g (scale %.3g), allowed %.3g (single's own order spread %.3g)",
										got.name, name, d.abs, d.scale, allowed, f.abs)
								}
							}
							if dl := lossDiff(got.losses, ref.losses); dl > equivalenceTol {
								t.Errorf("%s: losses %v, single's %v", got.name, got.losses, ref.losses)
							}
						}
					}
				}
				t.Logf("%d pipelined runs (K %v, M %v): worst difference %.2f of what is allowed", runs, ks, ms, worst)
			})
		}
	}
}

// tensorDiff is how far one tensor lies from another: the largest
// absolute difference and the reference's largest magnitude.
type tensorDiff struct{ abs, scale float64 }

// tensorDiffs returns each tensor's difference from want's.
func tensorDiffs(got, want map[string][]float32) map[string]tensorDiff {
	out := map[string]tensorDiff{}
	for name, b := range want {
		a := got[name]
		var d tensorDiff
		if len(a) != len(b) {
			d.abs = math.Inf(1)
		}
		for i := range min(len(a), len(b)) {
			d.abs = math.Max(d.abs, math.Abs(float64(a[i])-float64(b[i])))
			d.scale = math.Max(d.scale, math.Abs(float64(b[i])))
		}
		out[name] = d
	}
	return out
}

// withTiedCopies returns want with, for every tied parameter that got
// holds under another of its names (a copy on another device), that name
// too, holding the one weight.
func withTiedCopies(want, got map[string][]float32, ties []models.Tie) map[string][]float32 {
	out := make(map[string][]float32, len(want))
	for n, v := range want {
		out[n] = v
	}
	for _, tie := range ties {
		for _, alias := range tie.Names[1:] {
			if _, ok := got[alias]; ok {
				out[alias] = want[tie.Names[0]]
			}
		}
	}
	return out
}

// tiedFirst returns the first name of the tie that name belongs to, or
// name.
func tiedFirst(name string, ties []models.Tie) string {
	for _, tie := range ties {
		for _, n := range tie.Names {
			if n == name {
				return tie.Names[0]
			}
		}
	}
	return name
}
