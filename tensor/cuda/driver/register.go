//go:build cuda

package driver

import (
	"fmt"
	"runtime"

	"gorgonia.org/cu"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cuda"
)

// BackendName is the name the GPU backend registers under.
const BackendName = "cuda"

func init() {
	tensor.Register(tensor.Backend{
		Name:        BackendName,
		Description: description(),
		Open: func(o tensor.Options) (tensor.Device, error) {
			drv, err := Open(o.Index)
			if err != nil {
				return nil, err
			}
			return cuda.New(drv, BackendName, fmt.Sprintf("%s:%d", BackendName, o.Index)), nil
		},
		Memory: freeMemory,
	})
}

// freeMemory returns each GPU's free memory, as the checks before a run
// compare forecast peaks with it. It sets each GPU up as Open would.
func freeMemory() ([]int64, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return nil, cuError("cuDeviceGetCount", err)
	}
	out := make([]int64, n)
	for i := range out {
		runtime.LockOSThread()
		g, err := acquireGPU(i)
		if err == nil {
			out[i], _, err = cu.MemInfo()
			err = cuError("cuMemGetInfo", err)
			g.release()
		}
		runtime.UnlockOSThread()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// description names the GPUs for the backend list. Register takes a
// string, so it is read here, in init: gorgonia.org/cu's own init has
// already initialised the driver (cuInit), or ended the process.
func description() string {
	const what = "NVIDIA GPUs through the CUDA driver API, with cuBLAS and cuDNN where found at run time"
	n, err := cu.NumDevices()
	if err != nil || n == 0 {
		return what + " (no GPU found)"
	}
	name := "unknown"
	if dev, err := cu.GetDevice(0); err == nil {
		if s, err := dev.Name(); err == nil {
			name = s
		}
	}
	if n == 1 {
		return fmt.Sprintf("%s (1 GPU: %s)", what, name)
	}
	return fmt.Sprintf("%s (%d GPUs, the first a %s; device i is on GPU i mod %d)", what, n, name, n)
}
