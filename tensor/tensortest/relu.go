package tensortest

import (
	"math"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

func testReLU(t *testing.T, dev tensor.Device) {
	tests := []struct {
		name  string
		shape tensor.Shape
	}{
		{"1", tensor.Shape{1}},
		{"2", tensor.Shape{2}},
		{"3", tensor.Shape{3}},
		{"5", tensor.Shape{5}},
		{"10", tensor.Shape{10}},
		{"11", tensor.Shape{11}},
		{"50", tensor.Shape{50}},
		{"1001", tensor.Shape{1001}},
		{"[2 3 5 7]", tensor.Shape{2, 3, 5, 7}},
		{"split across threads", tensor.Shape{4, 25001}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.shape.Numel()
			rng := newRand(uint64(n))
			xs := randSlice(rng, n)
			// Exact zeros and a NaN: relu(0) = 0 stops the gradient, a
			// NaN propagates forward and lets the gradient through, as
			// in torch.
			xs[0] = 0
			if n > 3 {
				xs[n/2] = float32(math.NaN())
			}
			dys := randSlice(rng, n)
			wantY := reference.ReLU(widen(xs))
			wantDx := reference.ReLUBackward(wantY, widen(dys))

			x := upload(dev, tensor.Activations, tc.shape, xs)
			y := newGuarded(dev, tensor.Activations, tc.shape, nil)
			dev.ReLUForward(x, y.T)
			normPoolExact(t, "y", y.check(t, "y"), wantY)
			dy := upload(dev, tensor.Activations, tc.shape, dys)
			dx := newGuarded(dev, tensor.Activations, tc.shape, nil)
			dev.ReLUBackward(y.T, dy, dx.T)
			normPoolExact(t, "dx", dx.check(t, "dx"), wantDx)

			// In place: y aliasing x, dx aliasing dy.
			dev.ReLUForward(x, x)
			normPoolExact(t, "y in place", tensor.ToHost(x), wantY)
			dev.ReLUBackward(x, dy, dy)
			normPoolExact(t, "dx in place", tensor.ToHost(dy), wantDx)

			x.Release()
			dy.Release()
			y.release()
			dx.release()
		})
	}
	t.Run("special values", func(t *testing.T) { testReLUSpecialValues(t, dev) })
}

// testReLUSpecialValues checks signed zeros, infinities, NaNs of both
// signs and subnormals, forward and backward, the backward taking these
// values as y directly.
func testReLUSpecialValues(t *testing.T, dev tensor.Device) {
	xs := []float32{
		float32(math.Copysign(0, -1)), 0,
		float32(math.Inf(-1)), float32(math.Inf(1)),
		math.Float32frombits(0x7fc00000), math.Float32frombits(0xffc00000), // NaN, NaN with the sign bit
		math.Float32frombits(1), math.Float32frombits(0x80000001), // ± the smallest subnormal
		math.MaxFloat32, -math.MaxFloat32, 1, -1,
	}
	dys := make([]float32, len(xs))
	for i := range dys {
		dys[i] = float32(i + 1)
	}
	shape := tensor.Shape{len(xs)}
	x := upload(dev, tensor.Activations, shape, xs)
	dy := upload(dev, tensor.Activations, shape, dys)
	y := newGuarded(dev, tensor.Activations, shape, nil)
	dx := newGuarded(dev, tensor.Activations, shape, nil)
	dev.ReLUForward(x, y.T)
	normPoolExact(t, "y", y.check(t, "y"), reference.ReLU(widen(xs)))
	dev.ReLUBackward(x, dy, dx.T)
	normPoolExact(t, "dx", dx.check(t, "dx"), reference.ReLUBackward(widen(xs), widen(dys)))
	x.Release()
	dy.Release()
	y.release()
	dx.release()
}

// normPoolExact fails unless got equals want exactly, NaN matching NaN:
// for kernels that only select values (ReLU, max pooling), which leave a
// backend nothing to round.
func normPoolExact(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	for i, g := range got {
		if float64(g) != want[i] && !(math.IsNaN(float64(g)) && math.IsNaN(want[i])) {
			t.Errorf("%s[%d]: got %v, want %v", what, i, g, want[i])
			return
		}
	}
}
