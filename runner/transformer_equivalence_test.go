package runner

import (
	"context"
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

// adamwRoundOff is the fraction of an AdamW step by which a weight may
// differ whatever single-device training's own spread showed: AdamW
// moves a weight whose gradient is round-off alone by up to about lr a
// step, in a direction the round-off picks, so two orders of one sum can
// differ by a visible fraction of lr where the floor's two orders
// happened to agree. A lost or doubled contribution moves weights by
// whole steps, a thousand times more.
const adamwRoundOff = 1e-3

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
				ref := newSingleReference(t, ctx, base, ms)
				runs, worst := 0, 0.0
				for _, micro := range ms {
					for _, k := range ks {
						for _, o := range pipelines(k, micro) {
							got := train(t, ctx, at(o), equivalenceSteps)
							runs++
							names := make([]string, 0, len(got.params))
							for n := range got.params {
								names = append(names, n)
							}
							ref.checkNames(t, got.name, names)
							worst = math.Max(worst, ref.checkWeights(t, got.name, got.params))
							ref.checkLosses(t, got.name, got.losses)
						}
					}
				}
				t.Logf("%d pipelined runs (K %v, M %v): worst difference %.2f of what is allowed", runs, ks, ms, worst)
			})
		}
	}
}

// singleReference is what single-device training of one configuration
// gives, and how far it moves by itself: the rule of
// TestEquivalenceTransformers, for runs whose tensors come back in parts
// (one process's each).
type singleReference struct {
	losses []float64
	params map[string][]float32
	// floor is, per tensor, how far single-device training with each
	// micro-batch count of the sweep lies from one micro-batch: the
	// round-off of summing the same gradients in other orders.
	floor map[string]tensorDiff
	ties  []models.Tie
	// step is the size of one optimizer step on a weight whose gradient
	// is round-off alone: AdamW's learning rate (it normalises every
	// gradient element to a step of about lr), 0 for SGD.
	step float64
}

// newSingleReference trains base on one device with one micro-batch and
// with each of ms, for equivalenceSteps steps.
func newSingleReference(t *testing.T, ctx context.Context, base config.Config, ms []int) singleReference {
	t.Helper()
	at := func(micro int) config.Config {
		c := base
		c.Schedule = schedule.Options{Name: schedule.Single, Devices: 1, Micro: micro}
		return c
	}
	ref := train(t, ctx, at(1), equivalenceSteps)
	floor := map[string]tensorDiff{}
	for _, micro := range ms {
		other := train(t, ctx, at(micro), equivalenceSteps)
		for name, d := range tensorDiffs(other.params, ref.params) {
			d.abs = math.Max(d.abs, floor[name].abs)
			floor[name] = d
		}
	}
	m, err := models.Describe(base.Model, base.ModelConfig)
	if err != nil {
		t.Fatal(err)
	}
	r := singleReference{losses: ref.losses, params: ref.params, floor: floor, ties: m.Ties()}
	if c := base.WithDefaults(); c.Optimizer == "adamw" {
		r.step = float64(c.AdamW.LR)
	}
	return r
}

// checkWeights checks some of a run's trained tensors (one process's) by
// TestEquivalenceTransformers' rule: each within equivalenceTol of its
// scale, roundOffFactor times single-device training's own spread or,
// with AdamW, adamwRoundOff of a step,
// a tied parameter's every copy against the one weight. It returns the
// worst difference as a fraction of what is allowed.
func (r singleReference) checkWeights(t *testing.T, name string, got map[string][]float32) float64 {
	t.Helper()
	want := withTiedCopies(r.params, got, r.ties)
	worst := 0.0
	for n, v := range got {
		w, ok := want[n]
		if !ok {
			t.Errorf("%s: %s, which single-device training does not have", name, n)
			continue
		}
		d := tensorDiffs(map[string][]float32{n: v}, map[string][]float32{n: w})[n]
		f, ok := r.floor[n]
		if !ok { // a tied copy takes its first use's floor
			f = r.floor[tiedFirst(n, r.ties)]
		}
		allowed := max(equivalenceTol*d.scale, roundOffFactor*f.abs, adamwRoundOff*r.step)
		worst = math.Max(worst, d.abs/math.Max(allowed, 1e-30))
		if d.abs > allowed {
			t.Errorf("%s: %s differs from single's by %.3g (scale %.3g), allowed %.3g (single's own order spread %.3g)",
				name, n, d.abs, d.scale, allowed, f.abs)
		}
	}
	return worst
}

// checkNames checks that the processes' tensors together are every
// tensor single-device training has, and every tied copy once more.
func (r singleReference) checkNames(t *testing.T, name string, names []string) {
	t.Helper()
	got := map[string][]float32{}
	for _, n := range names {
		if _, dup := got[n]; dup {
			t.Errorf("%s: two processes hold %s", name, n)
		}
		got[n] = nil
	}
	for n := range withTiedCopies(r.params, got, r.ties) {
		if _, ok := got[n]; !ok {
			t.Errorf("%s: no process holds %s", name, n)
		}
	}
}

// checkLosses checks a run's per-step losses against single's.
func (r singleReference) checkLosses(t *testing.T, name string, losses []float64) {
	t.Helper()
	if d := lossDiff(losses, r.losses); d > equivalenceTol {
		t.Errorf("%s: losses %v, single's %v", name, losses, r.losses)
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
