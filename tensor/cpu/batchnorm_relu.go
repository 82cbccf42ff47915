package cpu

import (
	"sync"

	"github.com/pipecast/pipecast/tensor"
)

// Batch norm fused with the ReLU after it, as every batch norm of VGG and
// Inception and two of each ResNet bottleneck's three are followed. The
// forward clamps each block of y as soon as it is written, while it is
// in cache, instead of a ReLU's pass over the whole tensor; the backward
// masks dy by the ReLU's output block by block into a small buffer
// and feeds the batch norm's reductions and gradient from it, instead of
// writing the ReLU's gradient out and reading it back twice. The results
// are bit for bit those of BatchNormTrain then ReLUForward, and of
// ReLUBackward then BatchNormBackward: the same operations in the same
// order, on maps of up to bnMaskMax values per channel and sample; on
// larger ones the backward's float64 sums are taken a buffer at a time.

var _ tensor.BatchNormReLUKernels = (*Device)(nil)

// bnMaskMax bounds the gradient values the fused backward masks at a
// time (a 32 KiB buffer): a whole channel of a sample for maps up to
// 90×90.
const bnMaskMax = 1 << 13

// bnMaskBufs recycles the masking buffers, one per channel block in
// flight: a buffer on the stack would be zeroed at every call.
var bnMaskBufs = sync.Pool{New: func() any { return new([bnMaskMax]float32) }}

// BatchNormReLUTrain implements tensor.BatchNormReLUKernels: y =
// max(BatchNormTrain(x), 0).
func (d *Device) BatchNormReLUTrain(x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd *tensor.Tensor, p tensor.BatchNormParams) {
	d.bnTrain("batchnorm-relu train", x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd, p, true)
}

// BatchNormReLUBackward implements tensor.BatchNormReLUKernels: the
// backward of BatchNormReLUTrain, y its output.
func (d *Device) BatchNormReLUBackward(x, y, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta *tensor.Tensor) {
	d.bnBackward("batchnorm-relu backward", x, y, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta)
}

// bnGradientSumsMasked is bnGradientSums of dy passed through the ReLU
// whose output is y.
func bnGradientSumsMasked(buf *[bnMaskMax]float32, x, y, dy []float32, hw int, mean []float32, sumDy, sumDyXc []float64) {
	if n := len(mean) * hw; n <= bnMaskMax {
		// A block of channels (see bnLayout.parallel) or one channel
		// that fits the buffer: masked at once.
		reluGradSlice(y[:n], dy[:n], buf[:n])
		bnGradientSums(x, buf[:n], hw, mean, sumDy, sumDyXc)
		return
	}
	for off := 0; off < hw; off += bnMaskMax { // one large channel
		n := min(bnMaskMax, hw-off)
		reluGradSlice(y[off:off+n], dy[off:off+n], buf[:n])
		s, sx := bnGradientSum(x[off:off+n], buf[:n], float64(mean[0]))
		sumDy[0] += s
		sumDyXc[0] += sx
	}
}

// bnGradientMasked is bnGradient of dy passed through the ReLU whose
// output is y.
func bnGradientMasked(buf *[bnMaskMax]float32, x, y, dy, dx []float32, hw int, mean, p, q, r []float32) {
	if n := len(mean) * hw; n <= bnMaskMax {
		reluGradSlice(y[:n], dy[:n], buf[:n])
		bnGradient(x, buf[:n], dx, hw, mean, p, q, r)
		return
	}
	for off := 0; off < hw; off += bnMaskMax { // one large channel
		n := min(bnMaskMax, hw-off)
		reluGradSlice(y[off:off+n], dy[off:off+n], buf[:n])
		bnGradient(x[off:off+n], buf[:n], dx[off:off+n], n, mean, p, q, r)
	}
}
