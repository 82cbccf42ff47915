// Package cuda is pipecast's GPU backend: a tensor.Device that runs the
// model zoo's kernels on NVIDIA GPUs. It owns what does not depend on how
// the GPU is reached: memory (a caching allocator per logical device,
// accounted by category like the CPU backend's, with the driver's free
// and total beside), the kernels' launch geometry and the choice between
// the GPU's libraries (cuBLAS, cuDNN) and the kernels of our own in
// kernels/ (CUDA C, compiled ahead into an embedded fatbin).
//
// The GPU itself is reached through a Driver: package tensor/cuda/driver
// (build tag cuda) binds the CUDA driver API through gorgonia.org/cu and
// registers the "cuda" backend; package tensor/cuda/emu (build tag
// cudaemu) runs the same CUDA C on the CPU, so that the kernels and this
// package are tested against the CPU backend on machines without a GPU.
//
// New makes the Device of a Driver. Products go to the driver's BLAS
// (cuBLAS) and convolutions to its DNN (cuDNN) where the driver has them,
// else to the kernels of our own; two environment variables, read once
// by New, force our kernels even where the libraries exist, to compare
// the two or to rule a library out: PIPECAST_CUDA_GEMM=kernel (pc_sgemm
// for every product, the linear layers' included) and
// PIPECAST_CUDA_CONV=kernel (the implicit-GEMM convolutions). Any other
// value, or none, uses the library where there is one. The libraries a
// device uses are listed in its AcceleratorInfo.
//
// Beside tensor.Device's kernels, the Device has those of three optional
// families (tensor/capability.go): SGD's and AdamW's steps and the
// decoder transformers' tensor.TransformerKernels (transformer.go,
// attention.go), each on kernels of kernels/, attention's products as
// strided batches through the BLAS or pc_sgemm_batched.
//
// kernels/kernels.h is the contract between the CUDA C and the Go that
// launches it: kernels_gen.go and emu/dispatch_gen.h are generated from it
// (go generate ./tensor/cuda), and a test checks they are current.
package cuda

//go:generate go run ./internal/genlaunch
