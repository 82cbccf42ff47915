package tensortest

import (
	"fmt"
	"math"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

// sgdSteps is how many optimizer steps each case runs: the first, which
// initialises the momentum buffer, and several that use it.
const sgdSteps = 5

// testSGD checks tensor.SGDStep and tensor.SGDSteps along each route
// (capability.go): the device's kernels where it has them, and always
// the fallbacks composed from Kernels.
func testSGD(t *testing.T, dev tensor.Device) {
	_, stepper := dev.(tensor.SGDStepper)
	for _, r := range routes(dev, stepper) {
		t.Run(r.name, func(t *testing.T) { testSGDStep(t, r.dev) })
	}
	_, batcher := dev.(tensor.SGDBatcher)
	for _, r := range routes(dev, batcher) {
		for _, p := range sgdConfigs() {
			t.Run(fmt.Sprintf("batched/%s/%+v", r.name, p), func(t *testing.T) { testSGDSteps(t, r.dev, p) })
		}
	}
}

// sgdConfigs returns the hyper-parameters the SGD tests step with: every
// combination torch accepts of momentum, dampening, weight decay and
// Nesterov, and one with a large weight decay.
func sgdConfigs() []tensor.SGDParams {
	var configs []tensor.SGDParams
	for _, momentum := range []float32{0, 0.9} {
		for _, dampening := range []float32{0, 0.1} {
			for _, decay := range []float32{0, 1e-4} {
				for _, nesterov := range []bool{false, true} {
					// torch.optim.SGD refuses Nesterov without momentum
					// or with dampening.
					if nesterov && (momentum == 0 || dampening != 0) {
						continue
					}
					configs = append(configs, tensor.SGDParams{LR: 0.1, Momentum: momentum,
						Dampening: dampening, WeightDecay: decay, Nesterov: nesterov})
				}
			}
		}
	}
	// A weight decay large enough that a misapplied term shows at any
	// size of the gradient.
	return append(configs, tensor.SGDParams{LR: 0.05, Momentum: 0.5, Dampening: 0.3, WeightDecay: 0.2})
}

// testSGDStep checks tensor.SGDStep on dev against the float64 reference
// over sgdSteps steps, and by hand, and that bad arguments panic.
func testSGDStep(t *testing.T, dev tensor.Device) {
	rng := newRand(9)
	for _, p := range sgdConfigs() {
		for _, n := range elementwiseSizes {
			t.Run(fmt.Sprintf("%+v/n=%d", p, n), func(t *testing.T) {
				w0 := randSlice(rng, n)
				w := newGuarded(dev, tensor.Weights, tensor.Shape{n}, w0)
				defer w.release()
				wantW := widen(w0)
				var buf *guarded
				var bufT *tensor.Tensor
				var wantBuf []float64
				if p.Momentum != 0 {
					// No initial contents: the guard value fills the
					// buffer, which the first step must overwrite.
					buf = newGuarded(dev, tensor.Optimizer, tensor.Shape{n}, nil)
					defer buf.release()
					bufT = buf.T
					wantBuf = make([]float64, n)
				}
				for step := range sgdSteps {
					gs := randSlice(rng, n)
					g := upload(dev, tensor.Gradients, tensor.Shape{n}, gs)
					tensor.SGDStep(dev, w.T, g, bufT, p, step == 0)
					g.Release()
					reference.SGDStep(wantW, widen(gs), wantBuf, p, step == 0)
					what := fmt.Sprintf("step %d: w", step)
					compare(t, what, w.check(t, what), wantW, sgdRTol, sgdATol)
					if buf != nil {
						what := fmt.Sprintf("step %d: buf", step)
						compare(t, what, buf.check(t, what), wantBuf, sgdRTol, sgdATol)
					}
				}
			})
		}
	}
	t.Run("by hand", func(t *testing.T) { testSGDByHand(t, dev) })

	w := dev.Alloc(tensor.Weights, 4)
	g := dev.Alloc(tensor.Gradients, 4)
	b := dev.Alloc(tensor.Optimizer, 5)
	defer w.Release()
	defer g.Release()
	defer b.Release()
	checkKernelPanics(t, "SGDStep with momentum and no buffer",
		func() { tensor.SGDStep(dev, w, g, nil, tensor.SGDParams{LR: 1, Momentum: 0.9}, true) })
	checkKernelPanics(t, "SGDStep with a buffer of another shape",
		func() { tensor.SGDStep(dev, w, g, b, tensor.SGDParams{LR: 1, Momentum: 0.9}, true) })
	checkKernelPanics(t, "SGDStep with a gradient of another shape",
		func() { tensor.SGDStep(dev, w, b, nil, tensor.SGDParams{LR: 1}, true) })
}

// testSGDByHand checks two steps worked out from torch.optim.SGD's
// update rule, independently of the reference package, with values
// exact in binary so that float32 reproduces them exactly.
func testSGDByHand(t *testing.T, dev tensor.Device) {
	tests := []struct {
		name    string
		p       tensor.SGDParams
		wantW   float64 // after two steps
		wantBuf float64
	}{
		// w = 1, g = 0.5 at both steps.
		// plain: w = 1 − 0.5·0.5 = 0.75, then 0.75 − 0.25 = 0.5.
		{"plain", tensor.SGDParams{LR: 0.5}, 0.5, 0},
		// decay 0.5: d = 0.5 + 0.5 = 1, w = 0.5; d = 0.5 + 0.25 = 0.75,
		// w = 0.5 − 0.375 = 0.125.
		{"weight decay", tensor.SGDParams{LR: 0.5, WeightDecay: 0.5}, 0.125, 0},
		// momentum 0.5, dampening 0.5: buf = 0.5 (no dampening on the
		// first step), w = 0.75; buf = 0.25 + 0.25 = 0.5, w = 0.5.
		{"momentum", tensor.SGDParams{LR: 0.5, Momentum: 0.5, Dampening: 0.5}, 0.5, 0.5},
		// Nesterov, momentum 0.5: buf = 0.5, d = 0.5 + 0.25 = 0.75, w =
		// 0.625; buf = 0.25 + 0.5 = 0.75, d = 0.5 + 0.375 = 0.875, w =
		// 0.625 − 0.4375 = 0.1875.
		{"nesterov", tensor.SGDParams{LR: 0.5, Momentum: 0.5, Nesterov: true}, 0.1875, 0.75},
	}
	for _, tc := range tests {
		w := upload(dev, tensor.Weights, tensor.Shape{1}, []float32{1})
		g := upload(dev, tensor.Gradients, tensor.Shape{1}, []float32{0.5})
		buf := dev.Alloc(tensor.Optimizer, 1)
		for step := range 2 {
			tensor.SGDStep(dev, w, g, buf, tc.p, step == 0)
		}
		compare(t, tc.name+": w", tensor.ToHost(w), []float64{tc.wantW}, 0, 0)
		compare(t, tc.name+": buf", tensor.ToHost(buf), []float64{tc.wantBuf}, 0, 0)
		w.Release()
		g.Release()
		buf.Release()
	}
}

// testSGDSteps checks tensor.SGDSteps on parameters of many sizes (with
// and without zeroing the gradients, first steps and later ones mixed)
// against tensor.SGDStep and Fill on each, value for value: the batch
// must do the same float32 operations, only spread differently over
// threads.
func testSGDSteps(t *testing.T, dev tensor.Device, p tensor.SGDParams) {
	rng := newRand(11)
	sizes := append([]int{1, 3}, elementwiseSizes...)
	sizes = append(sizes, 70001, 5)
	type side struct{ w, g, buf []*tensor.Tensor }
	alloc := func() side {
		var s side
		for _, n := range sizes {
			s.w = append(s.w, upload(dev, tensor.Weights, tensor.Shape{n}, randSlice(rng, n)))
			s.g = append(s.g, dev.Alloc(tensor.Gradients, n))
			var buf *tensor.Tensor
			if p.Momentum != 0 {
				buf = dev.Alloc(tensor.Optimizer, n)
			}
			s.buf = append(s.buf, buf)
		}
		return s
	}
	batch, each := alloc(), alloc()
	for i := range sizes {
		dev.Copy(each.w[i], batch.w[i])
	}
	for step := range 3 {
		for _, zero := range []bool{false, true} {
			var steps []tensor.ParamStep
			for i, n := range sizes {
				gs := randSlice(rng, n)
				for _, g := range []*tensor.Tensor{batch.g[i], each.g[i]} {
					up := upload(dev, tensor.Gradients, tensor.Shape{n}, gs)
					dev.Copy(g, up)
					up.Release()
				}
				// Odd parameters start their momentum a step late, as a
				// parameter that had no gradient at first.
				first := step == i%2 && !zero
				if step < i%2 {
					continue
				}
				steps = append(steps, tensor.ParamStep{W: batch.w[i], G: batch.g[i], Buf: batch.buf[i], First: first})
				tensor.SGDStep(dev, each.w[i], each.g[i], each.buf[i], p, first)
				if zero {
					dev.Fill(each.g[i], 0)
				}
			}
			tensor.SGDSteps(dev, steps, p, zero)
			for i := range sizes {
				what := fmt.Sprintf("step %d, zero %v, parameter %d (%d values)", step, zero, i, sizes[i])
				sameBits(t, what+": w", tensor.ToHost(batch.w[i]), tensor.ToHost(each.w[i]))
				sameBits(t, what+": g", tensor.ToHost(batch.g[i]), tensor.ToHost(each.g[i]))
				if p.Momentum != 0 {
					sameBits(t, what+": buf", tensor.ToHost(batch.buf[i]), tensor.ToHost(each.buf[i]))
				}
			}
		}
	}
	for _, s := range []side{batch, each} {
		for i := range sizes {
			s.w[i].Release()
			s.g[i].Release()
			if s.buf[i] != nil {
				s.buf[i].Release()
			}
		}
	}
}

// sameBits fails t unless got and want hold the same float32 values bit
// for bit.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v, want %v (bit for bit)", what, i, got[i], want[i])
		}
	}
}
