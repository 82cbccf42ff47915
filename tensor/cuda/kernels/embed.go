// Package kernels holds the CUDA C of pipecast's GPU backend and the
// fatbin compiled from it. kernels.h is the contract: it declares every
// kernel and its semantics, and tensor/cuda generates its launchers and the
// emulator's dispatch from it; README.md gives the launch geometry each
// kernel expects. The .cu files are compiled as one unit, all.cu, by nvcc
// into kernels.fatbin (scripts/cuda-kernels.sh build, committed with the
// sources, so that building pipecast needs no CUDA toolkit) and by the CPU
// emulator of tensor/cuda/emu.
package kernels

import _ "embed"

// Fatbin is kernels.fatbin: SASS for sm_80 and sm_90 and compute_90 PTX,
// for the driver's cuModuleLoadData.
//
//go:embed kernels.fatbin
var Fatbin []byte

// Header is kernels.h, the kernels' prototypes and semantics.
//
//go:embed kernels.h
var Header string
