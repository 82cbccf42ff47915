// Package cpu is pipecast's pure-Go backend, registered as "cpu" and always
// built. Each device owns a pool of T worker threads and its kernels
// parallelise inside that pool, so K devices of T threads run side by side
// without sharing threads.
//
// GEMM and convolution go through one narrow seam (gemm.go) so that faster
// kernels can replace gonum's reference BLAS without touching the layers.
//
// Beside the backend the package registers, under the same name, a
// tensor.WorkspaceModel (workspace_model.go): its kernels' scratch policy
// written out (ConvWorkspaceElems, GemmWorkspaceElems, and
// AttentionWorkspaceElems for the attention kernels). The meta backend
// looks it up by name to forecast the scratch a CPU run holds, so neither
// package imports the other. Within pipecast it imports package tensor,
// internal/cpucache (the cache sizes its products' blocking follows,
// gemm_blocking.go) and, under the openblas tag, its own internal
// binding.
package cpu
