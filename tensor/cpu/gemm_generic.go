//go:build noasm || !amd64

package cpu

// selectKernel returns the portable micro-kernel: this build has no
// assembly.
func selectKernel() gemmKernel { return gemmKernelGo }

// gemmKernels lists the micro-kernels this build can run on this CPU.
func gemmKernels() []gemmKernel { return []gemmKernel{gemmKernelGo} }
