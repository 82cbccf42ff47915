// Package cpu is pipecast's pure-Go backend, registered as "cpu" and always
// built. Each device owns a pool of T worker threads and its kernels
// parallelise inside that pool, so K devices of T threads run side by side
// without sharing threads.
//
// GEMM and convolution go through one narrow seam (gemm.go) so that faster
// kernels can replace gonum's reference BLAS without touching the layers.
package cpu
