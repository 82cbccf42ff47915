package tensor

// Optional interfaces: what some devices can say about themselves beyond
// Device. Callers test for them with a type assertion (or the helper
// beside them), so that they need not import the backend.

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

// FiniteScreener is implemented by devices that find a tensor's first NaN
// or infinity where its values lie, on their own threads (the CPU
// backend's): training screens every gradient every step. Callers use
// FirstNonFinite.
type FiniteScreener interface {
	// FirstNonFinite returns the index of t's first NaN or infinity, or
	// −1.
	FirstNonFinite(t *Tensor) int
}

// BatchNormReLUKernels is implemented by devices that fuse a training
// batch norm with the ReLU after it (the CPU backend's, and the meta
// backend's, which accounts what a CPU run holds). Layers test for it
// and otherwise run the two kernels apart; the results are the same.
type BatchNormReLUKernels interface {
	// BatchNormReLUTrain is BatchNormTrain with y = max(y, 0) after.
	BatchNormReLUTrain(x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd *Tensor, p BatchNormParams)
	// BatchNormReLUBackward is ReLUBackward through y, the fused
	// forward's output, then BatchNormBackward: dx, dgamma and dbeta
	// from dy, the gradient of y.
	BatchNormReLUBackward(x, y, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta *Tensor)
}
