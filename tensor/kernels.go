package tensor

import "fmt"

// Kernels are the operations every backend implements: the model zoo's
// layers, and the elementwise operations from which the fallbacks of the
// optional kernel families (capability.go) are composed. Every kernel
// checks its arguments' shapes and panics on a mismatch (a programming
// error). Outputs are overwritten, except parameter gradients, which are
// accumulated (as torch accumulates .grad until zero_grad). Shapes below
// use N batch, C channels, H×W spatial size.
type Kernels interface {
	// Fill sets every element of t to v.
	Fill(t *Tensor, v float32)
	// Copy copies src into dst on the same device; the element counts
	// must match, the shapes need not.
	Copy(dst, src *Tensor)
	// Scale multiplies every element of t by alpha.
	Scale(t *Tensor, alpha float32)
	// Add sets y = a + b elementwise; y may alias a or b.
	Add(y, a, b *Tensor)
	// Axpy sets y += alpha·x elementwise.
	Axpy(alpha float32, x, y *Tensor)

	// Gemm sets c = alpha·op(a)·op(b) + beta·c for 2-D tensors, where
	// op(a) is a or aᵀ as transA says: op(a) is m×k, op(b) k×n, c m×n.
	Gemm(transA, transB bool, alpha float32, a, b *Tensor, beta float32, c *Tensor)

	// LinearForward sets y = x·wᵀ + bias (torch's nn.Linear): x [N, in],
	// w [out, in], bias [out] or nil, y [N, out].
	LinearForward(x, w, bias, y *Tensor)
	// LinearBackwardData sets dx = dy·w.
	LinearBackwardData(dy, w, dx *Tensor)
	// LinearBackwardParams accumulates dw += dyᵀ·x and, unless dbias is
	// nil, dbias += the column sums of dy.
	LinearBackwardParams(x, dy, dw, dbias *Tensor)

	// Conv2DForward sets y = conv(x, w) + bias, torch's conv2d with
	// groups 1 and dilation 1: x [N, C, H, W], w [O, C, KH, KW], bias [O]
	// or nil, y [N, O, OH, OW] with OH = (H + 2·PadH − KH)/StrideH + 1.
	Conv2DForward(x, w, bias, y *Tensor, p Conv2DParams)
	// Conv2DBackwardData sets dx, the gradient with respect to x, from dy.
	Conv2DBackwardData(dy, w, dx *Tensor, p Conv2DParams)
	// Conv2DBackwardFilter accumulates dw += the gradient with respect to
	// w and, unless dbias is nil, dbias += the sums of dy per channel.
	Conv2DBackwardFilter(x, dy, dw, dbias *Tensor, p Conv2DParams)

	// BatchNormTrain normalises x [N, C, H, W] (or [N, C]) with the
	// statistics of the batch, per channel: y = (x − mean)·invStd·gamma +
	// beta, invStd = 1/sqrt(var + Eps) with the biased variance. It saves
	// mean and invStd ([C] each) for the backward. Unless runMean and
	// runVar are nil, it updates them as torch does: run = (1 −
	// Momentum)·run + Momentum·stat, with the unbiased variance. A channel
	// with a single value per batch panics, as torch raises.
	BatchNormTrain(x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd *Tensor, p BatchNormParams)
	// BatchNormEval normalises x with the running statistics.
	BatchNormEval(x, gamma, beta, runMean, runVar, y *Tensor, p BatchNormParams)
	// BatchNormBackward sets dx and accumulates dgamma and dbeta from the
	// statistics a BatchNormTrain saved.
	BatchNormBackward(x, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta *Tensor)

	// ReLUForward sets y = max(x, 0); y may alias x.
	ReLUForward(x, y *Tensor)
	// ReLUBackward sets dx = dy where y > 0, else 0; dx may alias dy.
	ReLUBackward(y, dy, dx *Tensor)

	// MaxPool2DForward sets y to the maximum of each window, padding
	// counting as −∞ (torch's max_pool2d, ceil_mode off).
	MaxPool2DForward(x, y *Tensor, p Pool2DParams)
	// MaxPool2DBackward sets dx: each window's dy goes to the first
	// position holding the window's maximum in x (row-major), as torch's
	// recorded indices send it.
	MaxPool2DBackward(x, dy, dx *Tensor, p Pool2DParams)
	// AvgPool2DForward sets y to each window's mean, padding counting as
	// zeros in the divisor (torch's count_include_pad=True default).
	AvgPool2DForward(x, y *Tensor, p Pool2DParams)
	// AvgPool2DBackward sets dx from dy.
	AvgPool2DBackward(dy, dx *Tensor, p Pool2DParams)
	// AdaptiveAvgPool2DForward averages x [N, C, H, W] into y [N, C, OH,
	// OW], output cell i covering rows floor(i·H/OH) to ceil((i+1)·H/OH),
	// as torch's AdaptiveAvgPool2d bins them.
	AdaptiveAvgPool2DForward(x, y *Tensor)
	// AdaptiveAvgPool2DBackward sets dx from dy.
	AdaptiveAvgPool2DBackward(dy, dx *Tensor)

	// ConcatChannels copies srcs, each [N, Ci, H, W], into dst [N, ΣCi,
	// H, W] in order.
	ConcatChannels(dst *Tensor, srcs []*Tensor)
	// SplitChannels copies consecutive channel ranges of src into dsts,
	// the inverse of ConcatChannels.
	SplitChannels(src *Tensor, dsts []*Tensor)

	// DropoutForward sets y = x·keep/(1 − p) where keep is DropoutKeep for
	// each sample (row of the outermost dimension, numbered from
	// key.Sample) and element within it.
	DropoutForward(x, y *Tensor, p float32, key DropoutKey)
	// DropoutBackward sets dx = dy·keep/(1 − p) with the same mask.
	DropoutBackward(dy, dx *Tensor, p float32, key DropoutKey)

	// SoftmaxCrossEntropy returns scale·Σ_i −log softmax(logits_i)[labels_i]
	// over the rows of logits [N, classes] (scale 1/N gives torch's mean)
	// and, unless dlogits is nil, sets dlogits = scale·(softmax − onehot).
	// The sum is accumulated in float64.
	SoftmaxCrossEntropy(logits *Tensor, labels []int32, dlogits *Tensor, scale float32) float64
}

// Conv2DParams are a convolution's strides and zero padding.
type Conv2DParams struct {
	StrideH, StrideW int
	PadH, PadW       int
}

// OutSize returns the output height and width of a convolution with a
// KH×KW kernel on an H×W input; a dimension is 0 when the kernel does not
// fit in the padded input.
func (p Conv2DParams) OutSize(h, w, kh, kw int) (oh, ow int) {
	return windows(h+2*p.PadH, kh, p.StrideH), windows(w+2*p.PadW, kw, p.StrideW)
}

// windows returns how many windows of size k at the given stride fit in n
// elements (torch's floor((n − k)/stride) + 1), or 0 when none does.
func windows(n, k, stride int) int {
	if n < k {
		return 0
	}
	return (n-k)/stride + 1
}

// Validate reports parameters no convolution can have.
func (p Conv2DParams) Validate() error {
	if p.StrideH < 1 || p.StrideW < 1 || p.PadH < 0 || p.PadW < 0 {
		return fmt.Errorf("conv2d: stride %dx%d and padding %dx%d: strides must be ≥ 1, padding ≥ 0",
			p.StrideH, p.StrideW, p.PadH, p.PadW)
	}
	return nil
}

// Pool2DParams are a pooling window's size, strides and padding.
type Pool2DParams struct {
	KH, KW           int
	StrideH, StrideW int
	PadH, PadW       int
}

// OutSize returns the pooled height and width of an H×W input (ceil_mode
// off, as torch's default); a dimension is 0 when the window does not fit
// in the padded input.
func (p Pool2DParams) OutSize(h, w int) (oh, ow int) {
	return windows(h+2*p.PadH, p.KH, p.StrideH), windows(w+2*p.PadW, p.KW, p.StrideW)
}

// Validate reports parameters torch would reject, such as padding larger
// than half the window.
func (p Pool2DParams) Validate() error {
	if p.KH < 1 || p.KW < 1 || p.StrideH < 1 || p.StrideW < 1 || p.PadH < 0 || p.PadW < 0 {
		return fmt.Errorf("pool2d: window %dx%d, stride %dx%d, padding %dx%d: sizes and strides must be ≥ 1, padding ≥ 0",
			p.KH, p.KW, p.StrideH, p.StrideW, p.PadH, p.PadW)
	}
	if 2*p.PadH > p.KH || 2*p.PadW > p.KW {
		return fmt.Errorf("pool2d: padding %dx%d exceeds half the window %dx%d", p.PadH, p.PadW, p.KH, p.KW)
	}
	return nil
}

// BatchNormParams are torch's BatchNorm2d momentum and eps (defaults 0.1
// and 1e-5; torchvision's Inception-v3 uses eps 1e-3).
type BatchNormParams struct {
	Momentum float32
	Eps      float32
}

// DefaultBatchNorm returns torch's defaults.
func DefaultBatchNorm() BatchNormParams { return BatchNormParams{Momentum: 0.1, Eps: 1e-5} }

// SGDParams are torch.optim.SGD's hyper-parameters.
type SGDParams struct {
	LR          float32
	Momentum    float32
	Dampening   float32
	WeightDecay float32
	Nesterov    bool
}
