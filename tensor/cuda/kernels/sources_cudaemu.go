//go:build cudaemu

package kernels

import "embed"

// Sources are the CUDA C files, embedded in the cudaemu build only. The
// CPU emulator (tensor/cuda/emu) compiles all.cu through cgo, and the go
// command does not see files that cgo includes from outside the package's
// folder: the emulator refers to Sources, so the .cu files are inputs of
// its build and an edited kernel rebuilds it, rather than leaving a
// cached build running the old one.
//
//go:embed *.cu
var Sources embed.FS
