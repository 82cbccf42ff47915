//go:build cuda

package cli

// The cuda build links the GPU backend. gorgonia.org/cu, under it, ends
// the process at start-up when the CUDA driver cannot initialise (no GPU),
// so this build is for GPU machines only.
import _ "github.com/pipecast/pipecast/tensor/cuda/driver" // registers the "cuda" backend
