package cuda

// Kernel indexes the kernels of kernels/kernels.h, in the header's order
// (the constants Kernel… of kernels_gen.go).
type Kernel int

// NumKernels is how many kernels the header declares.
const NumKernels = int(numKernels)

// Name returns the kernel's symbol in the fatbin ("pc_relu_fwd").
func (k Kernel) Name() string { return kernelNames[k] }
