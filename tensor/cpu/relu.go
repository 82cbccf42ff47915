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
// propagates it.
func (d *Device) ReLUForward(x, y *tensor.Tensor) {
	const op = "relu forward"
	tensor.SameShape(op, x, y)
	d.mustOwn(op, x)
	xs, ys := Data(x), d.data(op, y, x.Len())
	d.pool.parallel(len(xs), reluGrain, func(lo, hi int) {
		src, dst := xs[lo:hi], ys[lo:hi]
		dst = dst[:len(src)]
		for i, v := range src {
			dst[i] = max(v, 0)
		}
	})
}

// ReLUBackward implements tensor.Kernels. It zeroes the gradient where y ≤
// 0, as torch's threshold_backward does, so a NaN in y lets the gradient
// through.
func (d *Device) ReLUBackward(y, dy, dx *tensor.Tensor) {
	const op = "relu backward"
	tensor.SameShape(op, y, dy, dx)
	d.mustOwn(op, y)
	ys, dys, dxs := Data(y), d.data(op, dy, y.Len()), d.data(op, dx, y.Len())
	d.pool.parallel(len(ys), reluGrain, func(lo, hi int) {
		yp, g, out := ys[lo:hi], dys[lo:hi], dxs[lo:hi]
		g, out = g[:len(yp)], out[:len(yp)]
		for i, v := range yp {
			out[i] = math.Float32frombits(math.Float32bits(g[i]) &^ reluStopMask(v))
		}
	})
}

// reluStopMask returns all ones where the gradient stops (y ≤ 0, −0
// included) and zero where it passes (y > 0 or NaN), computed without
// branches: which way a branch goes is random for activations, and
// mispredicting half of them costs more than these few integer
// operations.
func reluStopMask(y float32) uint32 {
	b := math.Float32bits(y)
	// int32(b) ≤ 0 exactly when y is +0 or has its sign bit set; widened
	// to 64 bits, int32(b) − 1 is then negative and the shift fills ones.
	stop := uint32((int64(int32(b)) - 1) >> 63)
	// A NaN has an exponent of all ones and a non-zero fraction: its
	// magnitude bits exceed those of +Inf, 0x7f800000.
	nan := uint32((0x7f800000 - int64(b&0x7fffffff)) >> 63)
	return stop &^ nan
}
