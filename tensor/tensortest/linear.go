package tensortest

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

func testLinear(t *testing.T, dev tensor.Device) {
	tests := []struct {
		name       string
		n, in, out int
		bias       bool
	}{
		{name: "batch 1 bias", n: 1, in: 7, out: 5, bias: true},
		{name: "batch 1 no bias", n: 1, in: 11, out: 3},
		{name: "batch 4 bias", n: 4, in: 13, out: 9, bias: true},
		{name: "batch 3 no bias", n: 3, in: 5, out: 1},
		// Wider than one GEMM tile (192 columns) and more than 16 outputs,
		// so that the bias gradient spans several blocks.
		{name: "batch 5 wide", n: 5, in: 40, out: 210, bias: true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := newRand(uint64(20 + i))
			xh, wh := randSlice(rng, tc.n*tc.in), randSlice(rng, tc.out*tc.in)
			dyh := randSlice(rng, tc.n*tc.out)
			dw0, db0 := randSlice(rng, tc.out*tc.in), randSlice(rng, tc.out)
			x := upload(dev, tensor.Activations, tensor.Shape{tc.n, tc.in}, xh)
			w := upload(dev, tensor.Weights, tensor.Shape{tc.out, tc.in}, wh)
			dy := upload(dev, tensor.Activations, tensor.Shape{tc.n, tc.out}, dyh)
			defer x.Release()
			defer w.Release()
			defer dy.Release()
			var bias *tensor.Tensor
			var bRef []float64
			if tc.bias {
				b := randSlice(rng, tc.out)
				bias = upload(dev, tensor.Weights, tensor.Shape{tc.out}, b)
				defer bias.Release()
				bRef = widen(b)
			}

			y := newGuarded(dev, tensor.Activations, tensor.Shape{tc.n, tc.out}, nil)
			defer y.release()
			dev.LinearForward(x, w, bias, y.T)
			compare(t, "y", y.check(t, "y"), reference.Linear(widen(xh), tc.n, tc.in, widen(wh), tc.out, bRef),
				reductionRTol, reductionATol)

			dx := newGuarded(dev, tensor.Activations, tensor.Shape{tc.n, tc.in}, nil)
			defer dx.release()
			dev.LinearBackwardData(dy, w, dx.T)
			compare(t, "dx", dx.check(t, "dx"), reference.LinearBackwardData(widen(dyh), tc.n, tc.out, widen(wh), tc.in),
				reductionRTol, reductionATol)

			// Parameter gradients accumulate onto what is there.
			dw := newGuarded(dev, tensor.Gradients, tensor.Shape{tc.out, tc.in}, dw0)
			defer dw.release()
			var dbias *tensor.Tensor
			var db *guarded
			if tc.bias {
				db = newGuarded(dev, tensor.Gradients, tensor.Shape{tc.out}, db0)
				defer db.release()
				dbias = db.T
			}
			dev.LinearBackwardParams(x, dy, dw.T, dbias)
			wantDW, wantDB := reference.LinearBackwardParams(widen(xh), tc.n, tc.in, widen(dyh), tc.out)
			compare(t, "dw", dw.check(t, "dw"), linearPlus(dw0, wantDW), reductionRTol, reductionATol)
			if db != nil {
				compare(t, "dbias", db.check(t, "dbias"), linearPlus(db0, wantDB), reductionRTol, reductionATol)
			}
		})
	}
	t.Run("bad shapes panic", func(t *testing.T) { testLinearPanics(t, dev) })
}

// linearPlus returns init + delta in float64: the expected value of a
// gradient that accumulates delta onto init.
func linearPlus(init []float32, delta []float64) []float64 {
	out := make([]float64, len(delta))
	for i := range out {
		out[i] = float64(init[i]) + delta[i]
	}
	return out
}

func testLinearPanics(t *testing.T, dev tensor.Device) {
	alloc := func(s ...int) *tensor.Tensor { return dev.Alloc(tensor.Activations, s...) }
	x, w, y := alloc(2, 3), alloc(4, 3), alloc(2, 4)
	wrongIn, wrongOut, wrongN, bias5 := alloc(4, 2), alloc(2, 5), alloc(3, 4), alloc(5)
	defer func() {
		for _, a := range []*tensor.Tensor{x, w, y, wrongIn, wrongOut, wrongN, bias5} {
			a.Release()
		}
	}()
	tests := []struct {
		name string
		fn   func()
	}{
		{"forward weights of other inputs", func() { dev.LinearForward(x, wrongIn, nil, y) }},
		{"forward output of other width", func() { dev.LinearForward(x, w, nil, wrongOut) }},
		{"forward bias of other length", func() { dev.LinearForward(x, w, bias5, y) }},
		{"backward data dy of other batch", func() { dev.LinearBackwardData(wrongN, w, x) }},
		{"backward params dw of other inputs", func() { dev.LinearBackwardParams(x, y, wrongIn, nil) }},
		{"backward params dbias of other length", func() { dev.LinearBackwardParams(x, y, w, bias5) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gemmMustPanic(t, fmt.Sprintf("linear: %s", tc.name), tc.fn)
		})
	}
}
