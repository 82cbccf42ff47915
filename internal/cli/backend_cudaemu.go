//go:build cudaemu

package cli

// The cudaemu build links the emulated GPU backend, "cuda-emu": the CUDA
// kernels run on the CPU (slowly), to test the GPU backend end to end on
// machines without a GPU.
import _ "github.com/pipecast/pipecast/tensor/cuda/emu" // registers the "cuda-emu" backend
