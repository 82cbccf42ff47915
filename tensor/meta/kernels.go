package meta

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// The kernels below do nothing: a meta tensor has no data. Those that are
// a network's cost (GEMM, linear, convolution, further down) count MACs.

// Fill does nothing.
func (d *Device) Fill(t *tensor.Tensor, v float32) {}

// Copy does nothing.
func (d *Device) Copy(dst, src *tensor.Tensor) {}

// Scale does nothing.
func (d *Device) Scale(t *tensor.Tensor, alpha float32) {}

// Add checks the shapes and does nothing else.
func (d *Device) Add(y, a, b *tensor.Tensor) { tensor.SameShape("add", y, a, b) }

// Axpy does nothing.
func (d *Device) Axpy(alpha float32, x, y *tensor.Tensor) {}

// ReLUForward does nothing.
func (d *Device) ReLUForward(x, y *tensor.Tensor) {}

// ReLUBackward does nothing.
func (d *Device) ReLUBackward(y, dy, dx *tensor.Tensor) {}

// AdaptiveAvgPool2DForward does nothing.
func (d *Device) AdaptiveAvgPool2DForward(x, y *tensor.Tensor) {}

// AdaptiveAvgPool2DBackward does nothing.
func (d *Device) AdaptiveAvgPool2DBackward(dy, dx *tensor.Tensor) {}

// ConcatChannels does nothing.
func (d *Device) ConcatChannels(dst *tensor.Tensor, srcs []*tensor.Tensor) {}

// SplitChannels does nothing.
func (d *Device) SplitChannels(src *tensor.Tensor, dsts []*tensor.Tensor) {}

// DropoutForward does nothing.
func (d *Device) DropoutForward(x, y *tensor.Tensor, p float32, key tensor.DropoutKey) {}

// DropoutBackward does nothing.
func (d *Device) DropoutBackward(dy, dx *tensor.Tensor, p float32, key tensor.DropoutKey) {}

// SGDStep implements tensor.SGDStepper and does nothing: as the CPU
// backend's kernel, it holds no workspace, where the composed fallback
// would account a temporary.
func (d *Device) SGDStep(w, g, buf *tensor.Tensor, p tensor.SGDParams, first bool) {}

// MaxPool2DForward does nothing.
func (d *Device) MaxPool2DForward(x, y *tensor.Tensor, p tensor.Pool2DParams) {}

// MaxPool2DBackward does nothing.
func (d *Device) MaxPool2DBackward(x, dy, dx *tensor.Tensor, p tensor.Pool2DParams) {}

// AvgPool2DForward does nothing.
func (d *Device) AvgPool2DForward(x, y *tensor.Tensor, p tensor.Pool2DParams) {}

// AvgPool2DBackward does nothing.
func (d *Device) AvgPool2DBackward(dy, dx *tensor.Tensor, p tensor.Pool2DParams) {}

// BatchNormTrain does nothing.
func (d *Device) BatchNormTrain(x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd *tensor.Tensor, p tensor.BatchNormParams) {
}

// BatchNormEval does nothing.
func (d *Device) BatchNormEval(x, gamma, beta, runMean, runVar, y *tensor.Tensor, p tensor.BatchNormParams) {
}

// BatchNormBackward does nothing.
func (d *Device) BatchNormBackward(x, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta *tensor.Tensor) {
}

// BatchNormReLUTrain does nothing: a meta device fuses batch norm with
// ReLU as the CPU backend does, so that its layers allocate what a CPU
// run's do.
func (d *Device) BatchNormReLUTrain(x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd *tensor.Tensor, p tensor.BatchNormParams) {
}

// BatchNormReLUBackward does nothing.
func (d *Device) BatchNormReLUBackward(x, y, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta *tensor.Tensor) {
}

// SoftmaxCrossEntropy returns 0.
func (d *Device) SoftmaxCrossEntropy(logits *tensor.Tensor, labels []int32, dlogits *tensor.Tensor, scale float32) float64 {
	return 0
}

// Gemm counts m·n·k MACs.
func (d *Device) Gemm(transA, transB bool, alpha float32, a, b *tensor.Tensor, beta float32, c *tensor.Tensor) {
	k := a.Dim(1)
	if transA {
		k = a.Dim(0)
	}
	d.macs.Add(int64(c.Len()) * int64(k))
	d.gemmScratch(c.Dim(0), c.Dim(1), k)
}

// LinearForward counts N·out·in MACs.
func (d *Device) LinearForward(x, w, bias, y *tensor.Tensor) {
	d.macs.Add(int64(y.Len()) * int64(w.Dim(1)))
	d.gemmScratch(x.Dim(0), w.Dim(0), w.Dim(1))
}

// LinearBackwardData counts N·out·in MACs.
func (d *Device) LinearBackwardData(dy, w, dx *tensor.Tensor) {
	d.macs.Add(int64(dy.Len()) * int64(w.Dim(1)))
	d.gemmScratch(dy.Dim(0), w.Dim(1), w.Dim(0))
}

// LinearBackwardParams counts N·out·in MACs.
func (d *Device) LinearBackwardParams(x, dy, dw, dbias *tensor.Tensor) {
	d.macs.Add(int64(dy.Len()) * int64(dw.Dim(1)))
	d.gemmScratch(dw.Dim(0), dw.Dim(1), x.Dim(0))
}

// Conv2DForward counts N·O·OH·OW·C·KH·KW MACs and accounts the scratch
// memory the imitated (CPU) backend's kernel would hold.
func (d *Device) Conv2DForward(x, w, bias, y *tensor.Tensor, p tensor.Conv2DParams) {
	d.macs.Add(convMACs("conv2d forward", x, w, y, p))
	d.scratch(tensor.ConvForward, x, w, y, p)
}

// Conv2DBackwardData counts as many MACs as the forward and accounts the
// imitated kernel's scratch.
func (d *Device) Conv2DBackwardData(dy, w, dx *tensor.Tensor, p tensor.Conv2DParams) {
	d.macs.Add(convMACs("conv2d backward data", dx, w, dy, p))
	d.scratch(tensor.ConvBackwardData, dx, w, dy, p)
}

// Conv2DBackwardFilter counts as many MACs as the forward and accounts
// the imitated kernel's scratch.
func (d *Device) Conv2DBackwardFilter(x, dy, dw, dbias *tensor.Tensor, p tensor.Conv2DParams) {
	d.macs.Add(convMACs("conv2d backward filter", x, dw, dy, p))
	d.scratch(tensor.ConvBackwardFilter, x, dw, dy, p)
}

// gemmScratch accounts, and at once returns, the Workspace bytes the
// imitated backend's m×n×k product holds (the CPU backend's packing
// buffers) on d.Threads() threads.
func (d *Device) gemmScratch(m, n, k int) {
	if d.ws == nil {
		return
	}
	d.holdScratch(d.ws.GemmWorkspaceElems(m, n, k, d.threads))
}

// scratch accounts, and at once returns, the Workspace bytes the imitated
// backend's convolution pass holds while it runs on d.Threads() threads:
// the CPU backend is the one whose runs the meta backend stands in for,
// and its products and convolutions are its only kernels that take
// scratch memory.
func (d *Device) scratch(pass tensor.ConvPass, x, w, y *tensor.Tensor, p tensor.Conv2DParams) {
	if d.ws == nil {
		return
	}
	d.holdScratch(d.ws.ConvWorkspaceElems(pass, x.Shape(), w.Shape(), y.Shape(), p, d.threads))
}

// holdScratch allocates and frees elems elements of Workspace, so that
// they count in the peak and not in the live bytes.
func (d *Device) holdScratch(elems int) {
	if b := int64(elems) * tensor.BytesPerElement; b > 0 {
		d.mem.Alloc(tensor.Workspace, b)
		d.mem.Free(tensor.Workspace, b)
	}
}

func convMACs(op string, x, w, y *tensor.Tensor, p tensor.Conv2DParams) int64 {
	if x.Rank() != 4 || w.Rank() != 4 || y.Rank() != 4 {
		panic(fmt.Sprintf("meta: %s: x %v, w %v, y %v must be 4-D", op, x.Shape(), w.Shape(), y.Shape()))
	}
	oh, ow := p.OutSize(x.Dim(2), x.Dim(3), w.Dim(2), w.Dim(3))
	if x.Dim(1) != w.Dim(1) || y.Dim(0) != x.Dim(0) || y.Dim(1) != w.Dim(0) || y.Dim(2) != oh || y.Dim(3) != ow {
		panic(fmt.Sprintf("meta: %s: x %v, w %v, y %v do not agree", op, x.Shape(), w.Shape(), y.Shape()))
	}
	return int64(y.Len()) * int64(w.Dim(1)*w.Dim(2)*w.Dim(3))
}
