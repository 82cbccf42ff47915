package tensor

// Optional interfaces: what some devices can say about themselves, and
// kernels that only some devices have, beyond Device. Callers test for
// them with a type assertion, or call the function beside them, so that
// they need not import the backend.
//
// A new kernel family (a fused pair, an optimizer's step, a new layer's
// forward and backward) arrives here rather than in Kernels, so that it
// touches only the backends that gain a fast kernel for it:
//
//  1. an interface in this file holds its kernels (SGDStepper,
//     SGDBatcher, AdamWStepper, BatchNormReLUKernels, FiniteScreener);
//  2. a package-level function beside it runs the device's kernel where
//     the device implements the interface, and otherwise a fallback
//     composed from Kernels (SGDStep from Copy, Scale and Axpy), which
//     allocates its temporaries in the Workspace category and releases
//     them before it returns, as a kernel does. What Kernels cannot
//     compose (AdamW's square root and division) falls back to a plain
//     loop on host copies (AdamWSteps), exported beside it so that a
//     backend's kernel can share it (AdamWStepIn);
//  3. the backends with a fast kernel implement the interface and say so
//     with a compile-time assertion (var _ tensor.SGDStepper =
//     (*Device)(nil)); a backend without one runs the family through the
//     fallback. The meta backend implements the families whose CPU
//     kernels hold other memory than their fallbacks, so that it accounts
//     what a CPU run holds;
//  4. the shared suite (package tensortest) checks the device's kernel
//     against the float64 reference where the device has one, and the
//     fallback on every device, through a wrapper that hides the device's
//     capabilities.
//
// A caller whose own allocations depend on the choice (Sequential keeps
// no separate ReLU output where batch norm and ReLU are fused) tests for
// the interface itself; others call the function.

// MACCounter is implemented by devices that count the multiply-accumulates
// of the kernels they run (the meta backend's): those of convolutions,
// linear layers and GEMMs, the usual measure of a network's work.
type MACCounter interface {
	// MACs returns the multiply-accumulates counted since the device
	// opened.
	MACs() int64
}

// SymbolicDevice is implemented by devices that may hold no values: their
// tensors have shapes and are accounted by category, but store nothing
// (the meta backend's).
type SymbolicDevice interface {
	// Symbolic reports whether the device's tensors hold no values.
	Symbolic() bool
}

// IsSymbolic reports whether d's tensors hold no values, so that work
// whose only product is values (drawing initial weights, say) can be
// skipped on it. Devices that do not implement SymbolicDevice hold values.
func IsSymbolic(d Device) bool {
	s, ok := d.(SymbolicDevice)
	return ok && s.Symbolic()
}

// Accelerator is implemented by devices that are (a share of) a GPU: they
// describe it for run records.
type Accelerator interface {
	AcceleratorInfo() AcceleratorInfo
}

// AcceleratorInfo describes the GPU behind a device.
type AcceleratorInfo struct {
	// Model is the GPU's name ("NVIDIA H200"); Ordinal its index among
	// the machine's GPUs.
	Model   string
	Ordinal int
	// Share says how the device has its GPU: "whole" (one device per
	// GPU) or "stream" (one stream among the process's devices on that
	// GPU, all multiprocessors shared).
	Share string
	// Driver is the CUDA driver's version; Libraries the matrix and
	// convolution libraries in use, with versions ("cublas 12.8.4").
	Driver    string
	Libraries []string
	// FreeBytes and TotalBytes are the GPU's memory as the driver saw it
	// when asked (every process and device on it together).
	FreeBytes, TotalBytes int64
}

// FiniteScreener is implemented by devices that find the first NaN or
// infinity of a set of tensors where their values lie, on their own
// threads (the CPU backend's): training screens every gradient every
// step, and a model's hundreds of gradients, most too small to share out
// one by one, are screened as one run of values. Callers use
// FirstNonFinite, FirstNonFiniteOf or FirstNonFiniteOn.
type FiniteScreener interface {
	// FirstNonFiniteOf returns the position in ts of the first tensor
	// that holds a NaN or an infinity and the index of its first such
	// value, or −1, −1.
	FirstNonFiniteOf(ts []*Tensor) (tensor, index int)
}

// SGDStepper is implemented by devices with a kernel for one step of
// torch.optim.SGD (every backend's so far). Callers use SGDStep, which
// composes the step from Kernels on other devices.
type SGDStepper interface {
	// SGDStep applies one step of torch.optim.SGD to w with gradient g
	// and momentum buffer buf (nil when Momentum is 0): d = g +
	// WeightDecay·w; buf = d on the first step, else Momentum·buf + (1 −
	// Dampening)·d; d = d + Momentum·buf if Nesterov, else buf; w −=
	// LR·d.
	SGDStep(w, g, buf *Tensor, p SGDParams, first bool)
}

// SGDBatcher is implemented by devices that apply one optimizer step to
// many parameters in one call (the CPU backend's), sharing all their
// values out over the device's threads rather than each tensor in turn:
// most of a network's parameters are too small to share out alone.
type SGDBatcher interface {
	// SGDSteps does, for every entry s of steps, SGDStep(s.W, s.G, s.Buf,
	// p, s.First) and then, with zeroGrads, Fill(s.G, 0) — torch's
	// optimizer step followed by zero_grad(set_to_none=False) — with the
	// same results value for value as the device's SGDStep. Callers use
	// the function SGDSteps.
	SGDSteps(steps []ParamStep, p SGDParams, zeroGrads bool)
}

// AdamWStepper is implemented by devices with a kernel for
// torch.optim.AdamW's step (the CPU and CUDA backends'). Callers use AdamWSteps,
// which runs the step on host copies of the tensors on other devices.
type AdamWStepper interface {
	// AdamWSteps does, for every entry s of steps, one AdamW step of
	// s.W (AdamWStepIn's update, its moments s.ExpAvg and s.ExpAvgSq, at
	// step number s.Step) and then, with zeroGrads, Fill(s.G, 0), with
	// the same results value for value as AdamWStepIn. It panics where
	// an entry fails AdamWParamStep.Check.
	AdamWSteps(steps []AdamWParamStep, p AdamWParams, zeroGrads bool)
}

// ParamStep is one parameter's part of a batched optimizer step: its
// value, gradient and momentum buffer (nil without momentum), and whether
// this is the buffer's first step.
type ParamStep struct {
	W, G, Buf *Tensor
	First     bool
}

// BatchNormReLUKernels is implemented by devices that fuse a training
// batch norm with the ReLU after it (the CPU backend's, and the meta
// backend's, which accounts what a CPU run holds). Layers test for it
// and otherwise run the two kernels apart, and keep both outputs; the
// results are the same. The functions BatchNormReLUTrain and
// BatchNormReLUBackward run the pair on any device.
type BatchNormReLUKernels interface {
	// BatchNormReLUTrain is BatchNormTrain with y = max(y, 0) after.
	BatchNormReLUTrain(x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd *Tensor, p BatchNormParams)
	// BatchNormReLUBackward is ReLUBackward through y, the fused
	// forward's output, then BatchNormBackward: dx, dgamma and dbeta
	// from dy, the gradient of y.
	BatchNormReLUBackward(x, y, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta *Tensor)
}
