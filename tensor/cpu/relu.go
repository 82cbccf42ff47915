package cpu

import (
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// reluGrain is how many elements a thread's share of a ReLU holds at
// least: the loop streams memory at a few GB/s per thread, so below this
// a wake-up costs more than it saves.
const reluGrain = 1 << 15

// ReLUForward implements tensor.Kernels. A NaN stays NaN, as torch's relu
// propagates it. Runs of 8 go to the AVX2 loop where the CPU has it
// (elemSIMD), which computes the same bits.
func (d *Device) ReLUForward(x, y *tensor.Tensor) {
	const op = "relu forward"
	tensor.SameShape(op, x, y)
	d.mustOwn(op, x)
	xs, ys := Data(x), d.data(op, y, x.Len())
	d.pool.parallel(len(xs), reluGrain, func(lo, hi int) { reluSlice(xs[lo:hi], ys[lo:hi]) })
}

// reluSlice sets dst = max(src, 0), NaN kept.
func reluSlice(src, dst []float32) {
	dst = dst[:len(src)]
	if n := len(src) &^ 7; elemSIMD && n > 0 {
		reluForward8(&src[0], &dst[0], n)
		src, dst = src[n:], dst[n:]
	}
	for i, v := range src {
		// Selecting the bits to keep compiles to a conditional move:
		// no branch to mispredict on activations' random signs. A
		// NaN compares false and is kept; −0 becomes +0, as max(v,
		// 0) would give.
		b := math.Float32bits(v)
		if v <= 0 {
			b = 0
		}
		dst[i] = math.Float32frombits(b)
	}
}

// ReLUBackward implements tensor.Kernels. It zeroes the gradient where y ≤
// 0, as torch's threshold_backward does, so a NaN in y lets the gradient
// through.
func (d *Device) ReLUBackward(y, dy, dx *tensor.Tensor) {
	const op = "relu backward"
	tensor.SameShape(op, y, dy, dx)
	d.mustOwn(op, y)
	ys, dys, dxs := Data(y), d.data(op, dy, y.Len()), d.data(op, dx, y.Len())
	d.pool.parallel(len(ys), reluGrain, func(lo, hi int) { reluGradSlice(ys[lo:hi], dys[lo:hi], dxs[lo:hi]) })
}

// reluGradSlice sets out = g where y > 0 or y is NaN, else 0.
func reluGradSlice(y, g, out []float32) {
	g, out = g[:len(y)], out[:len(y)]
	if n := len(y) &^ 7; elemSIMD && n > 0 {
		reluBackward8(&y[0], &g[0], &out[0], n)
		y, g, out = y[n:], g[n:], out[n:]
	}
	for i, v := range y {
		// As in the forward, a conditional move rather than a branch:
		// the gradient stops where y ≤ 0 (−0 included) and passes
		// where y > 0 or is NaN, which compares false.
		b := math.Float32bits(g[i])
		if v <= 0 {
			b = 0
		}
		out[i] = math.Float32frombits(b)
	}
}
