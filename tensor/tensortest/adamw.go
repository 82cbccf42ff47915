package tensortest

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

// adamwSteps is how many steps each case runs: enough for the bias
// corrections, large on the first steps, to fall off and for the
// moments to carry history.
const adamwSteps = 5

// testAdamW checks tensor.AdamWSteps along each route (capability.go):
// the device's kernel where it has one, and always the fallback on host
// copies.
func testAdamW(t *testing.T, dev tensor.Device) {
	_, stepper := dev.(tensor.AdamWStepper)
	for _, r := range routes(dev, stepper) {
		t.Run(r.name, func(t *testing.T) {
			testAdamWStep(t, r.dev)
			t.Run("by hand", func(t *testing.T) { testAdamWByHand(t, r.dev) })
			for _, p := range adamwConfigs() {
				t.Run(fmt.Sprintf("batched/%+v", p), func(t *testing.T) { testAdamWSteps(t, r.dev, p) })
			}
		})
	}
}

// adamwConfigs returns the hyper-parameters the AdamW tests step with:
// torch's defaults; a learning rate large enough that a misapplied term
// shows, without weight decay and with it; and small betas with an eps
// that weighs against √v.
func adamwConfigs() []tensor.AdamWParams {
	return []tensor.AdamWParams{
		tensor.DefaultAdamW(),
		{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0},
		{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1},
		{LR: 0.05, Beta1: 0.5, Beta2: 0.9, Eps: 1e-2, WeightDecay: 0.5},
	}
}

// testAdamWStep checks tensor.AdamWSteps on one parameter at a time
// against the float64 reference over adamwSteps steps, and that bad
// arguments panic.
func testAdamWStep(t *testing.T, dev tensor.Device) {
	rng := newRand(13)
	for _, p := range adamwConfigs() {
		for _, n := range elementwiseSizes {
			t.Run(fmt.Sprintf("%+v/n=%d", p, n), func(t *testing.T) {
				w0 := randSlice(rng, n)
				w := newGuarded(dev, tensor.Weights, tensor.Shape{n}, w0)
				m := newGuarded(dev, tensor.Optimizer, tensor.Shape{n}, make([]float32, n))
				v := newGuarded(dev, tensor.Optimizer, tensor.Shape{n}, make([]float32, n))
				defer w.release()
				defer m.release()
				defer v.release()
				wantW, wantM, wantV := widen(w0), make([]float64, n), make([]float64, n)
				for step := 1; step <= adamwSteps; step++ {
					gs := randSlice(rng, n)
					g := upload(dev, tensor.Gradients, tensor.Shape{n}, gs)
					tensor.AdamWSteps(dev, []tensor.AdamWParamStep{{W: w.T, G: g, ExpAvg: m.T, ExpAvgSq: v.T, Step: step}}, p, false)
					compare(t, fmt.Sprintf("step %d: g", step), tensor.ToHost(g), widen(gs), 0, 0)
					g.Release()
					reference.AdamWStep(wantW, widen(gs), wantM, wantV, p, step)
					for _, c := range []struct {
						name       string
						got        *guarded
						want       []float64
						rtol, atol float64
					}{
						{"w", w, wantW, adamwRTol, adamwWeightATol},
						{"exp_avg", m, wantM, adamwRTol, adamwMomentATol},
						{"exp_avg_sq", v, wantV, adamwRTol, 0},
					} {
						what := fmt.Sprintf("step %d: %s", step, c.name)
						compare(t, what, c.got.check(t, what), c.want, c.rtol, c.atol)
					}
				}
			})
		}
	}

	w := dev.Alloc(tensor.Weights, 4)
	g := dev.Alloc(tensor.Gradients, 4)
	m := dev.Alloc(tensor.Optimizer, 4)
	v := dev.Alloc(tensor.Optimizer, 4)
	other := dev.Alloc(tensor.Optimizer, 5)
	for _, x := range []*tensor.Tensor{w, g, m, v, other} {
		defer x.Release()
	}
	p := tensor.DefaultAdamW()
	checkKernelPanics(t, "AdamWSteps with a moment of another shape", func() {
		tensor.AdamWSteps(dev, []tensor.AdamWParamStep{{W: w, G: g, ExpAvg: m, ExpAvgSq: other, Step: 1}}, p, false)
	})
	checkKernelPanics(t, "AdamWSteps with a gradient of another shape", func() {
		tensor.AdamWSteps(dev, []tensor.AdamWParamStep{{W: w, G: other, ExpAvg: m, ExpAvgSq: v, Step: 1}}, p, false)
	})
	checkKernelPanics(t, "AdamWSteps at step 0", func() {
		tensor.AdamWSteps(dev, []tensor.AdamWParamStep{{W: w, G: g, ExpAvg: m, ExpAvgSq: v, Step: 0}}, p, false)
	})
}

// testAdamWByHand checks steps worked out from torch.optim.AdamW's
// update rule, independently of the reference package, with
// hyper-parameters and values exact in binary so that float32 reproduces
// them exactly. w = 1 and g = 0.5 at every step; lr 0.75, β1 0.5, eps 0.
func testAdamWByHand(t *testing.T, dev tensor.Device) {
	tests := []struct {
		name                string
		p                   tensor.AdamWParams
		steps               int
		wantW, wantM, wantV float64 // after steps steps
	}{
		// β2 0: v = g² = 0.25 and √(1 − 0^t) = 1, so denom = 0.5.
		// Step 1: m = 0.25, step size 0.75/(1 − 0.5) = 1.5, w = 1 −
		// 1.5·0.25/0.5 = 0.25. Step 2: m = 0.125 + 0.25 = 0.375, step
		// size 0.75/0.75 = 1, w = 0.25 − 0.375/0.5 = −0.5.
		{"no weight decay", tensor.AdamWParams{LR: 0.75, Beta1: 0.5}, 2, -0.5, 0.375, 0.25},
		// Weight decay 0.5 multiplies w by 1 − 0.75·0.5 = 0.625 first:
		// w = 0.625 − 0.75 = −0.125, then −0.078125 − 0.75 = −0.828125.
		{"weight decay", tensor.AdamWParams{LR: 0.75, Beta1: 0.5, WeightDecay: 0.5}, 2, -0.828125, 0.375, 0.25},
		// β2 0.75: v = 0.25·0.25 = 0.0625, whose bias correction
		// √(1 − 0.75) = 0.5 brings √v = 0.25 back to the 0.5 of g: w =
		// 0.25 as without it; uncorrected, w would be 0.25 − 0.5 = −0.25.
		{"second moment's bias correction", tensor.AdamWParams{LR: 0.75, Beta1: 0.5, Beta2: 0.75}, 1, 0.25, 0.25, 0.0625},
	}
	for _, tc := range tests {
		w := upload(dev, tensor.Weights, tensor.Shape{1}, []float32{1})
		g := upload(dev, tensor.Gradients, tensor.Shape{1}, []float32{0.5})
		m := upload(dev, tensor.Optimizer, tensor.Shape{1}, []float32{0})
		v := upload(dev, tensor.Optimizer, tensor.Shape{1}, []float32{0})
		for step := 1; step <= tc.steps; step++ {
			tensor.AdamWSteps(dev, []tensor.AdamWParamStep{{W: w, G: g, ExpAvg: m, ExpAvgSq: v, Step: step}}, tc.p, false)
		}
		compare(t, tc.name+": w", tensor.ToHost(w), []float64{tc.wantW}, 0, 0)
		compare(t, tc.name+": exp_avg", tensor.ToHost(m), []float64{tc.wantM}, 0, 0)
		compare(t, tc.name+": exp_avg_sq", tensor.ToHost(v), []float64{tc.wantV}, 0, 0)
		for _, x := range []*tensor.Tensor{w, g, m, v} {
			x.Release()
		}
	}
}

// testAdamWSteps checks tensor.AdamWSteps on many parameters in one call
// (with and without zeroing the gradients, the parameters at different
// step numbers) against one call per parameter followed by Fill on its
// gradient, bit for bit: the batch must do the same float32 operations,
// only spread differently over threads.
func testAdamWSteps(t *testing.T, dev tensor.Device, p tensor.AdamWParams) {
	rng := newRand(17)
	sizes := append([]int{1, 3}, elementwiseSizes...)
	sizes = append(sizes, 70001, 5)
	type side struct{ w, g, m, v []*tensor.Tensor }
	alloc := func() side {
		var s side
		for _, n := range sizes {
			s.w = append(s.w, upload(dev, tensor.Weights, tensor.Shape{n}, randSlice(rng, n)))
			s.g = append(s.g, dev.Alloc(tensor.Gradients, n))
			s.m = append(s.m, upload(dev, tensor.Optimizer, tensor.Shape{n}, make([]float32, n)))
			s.v = append(s.v, upload(dev, tensor.Optimizer, tensor.Shape{n}, make([]float32, n)))
		}
		return s
	}
	batch, each := alloc(), alloc()
	for i := range sizes {
		dev.Copy(each.w[i], batch.w[i])
	}
	counts := make([]int, len(sizes)) // each parameter's steps so far
	for round := range 3 {
		for _, zero := range []bool{false, true} {
			var steps []tensor.AdamWParamStep
			for i, n := range sizes {
				// Odd parameters join a round late, as a parameter that
				// had no gradient at first: their step numbers lag.
				if round < i%2 {
					continue
				}
				gs := randSlice(rng, n)
				for _, g := range []*tensor.Tensor{batch.g[i], each.g[i]} {
					dev.Upload(g, gs)
				}
				counts[i]++
				steps = append(steps, tensor.AdamWParamStep{W: batch.w[i], G: batch.g[i], ExpAvg: batch.m[i], ExpAvgSq: batch.v[i], Step: counts[i]})
				tensor.AdamWSteps(dev, []tensor.AdamWParamStep{{W: each.w[i], G: each.g[i], ExpAvg: each.m[i], ExpAvgSq: each.v[i], Step: counts[i]}}, p, false)
				if zero {
					dev.Fill(each.g[i], 0)
				}
			}
			tensor.AdamWSteps(dev, steps, p, zero)
			for i := range sizes {
				what := fmt.Sprintf("round %d, zero %v, parameter %d (%d values)", round, zero, i, sizes[i])
				sameBits(t, what+": w", tensor.ToHost(batch.w[i]), tensor.ToHost(each.w[i]))
				sameBits(t, what+": g", tensor.ToHost(batch.g[i]), tensor.ToHost(each.g[i]))
				sameBits(t, what+": exp_avg", tensor.ToHost(batch.m[i]), tensor.ToHost(each.m[i]))
				sameBits(t, what+": exp_avg_sq", tensor.ToHost(batch.v[i]), tensor.ToHost(each.v[i]))
			}
		}
	}
	for _, s := range []side{batch, each} {
		for i := range sizes {
			for _, x := range []*tensor.Tensor{s.w[i], s.g[i], s.m[i], s.v[i]} {
				x.Release()
			}
		}
	}
}
