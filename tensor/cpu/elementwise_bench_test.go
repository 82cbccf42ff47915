package cpu_test

import (
	"runtime"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

// newElementwiseBenchDevice opens a device with a thread per core, closed
// when the benchmark ends.
func newElementwiseBenchDevice(b *testing.B) *cpu.Device {
	dev := cpu.New(tensor.Options{Threads: runtime.NumCPU()})
	b.Cleanup(func() { dev.Close() })
	return dev
}

// benchElementwise times op on vectors of n elements; SetBytes counts
// the tensors (of n elements each) that op reads or writes once per call.
func benchElementwise(b *testing.B, n, tensors int, op func(dev *cpu.Device, x, y, z *tensor.Tensor)) {
	dev := newElementwiseBenchDevice(b)
	x := dev.Alloc(tensor.Activations, n)
	y := dev.Alloc(tensor.Activations, n)
	z := dev.Alloc(tensor.Activations, n)
	defer x.Release()
	defer y.Release()
	defer z.Release()
	dev.Fill(x, 0.5)
	dev.Fill(y, 0.25)
	b.SetBytes(int64(tensors) * int64(n) * tensor.BytesPerElement)
	b.ResetTimer()
	for b.Loop() {
		op(dev, x, y, z)
	}
}

func BenchmarkFill1M(b *testing.B) {
	benchElementwise(b, 1<<20, 1, func(dev *cpu.Device, x, _, _ *tensor.Tensor) { dev.Fill(x, 1) })
}

func BenchmarkCopy1M(b *testing.B) {
	benchElementwise(b, 1<<20, 2, func(dev *cpu.Device, x, y, _ *tensor.Tensor) { dev.Copy(y, x) })
}

func BenchmarkScale1M(b *testing.B) {
	benchElementwise(b, 1<<20, 2, func(dev *cpu.Device, x, _, _ *tensor.Tensor) { dev.Scale(x, 1) })
}

func BenchmarkAdd1M(b *testing.B) {
	benchElementwise(b, 1<<20, 3, func(dev *cpu.Device, x, y, z *tensor.Tensor) { dev.Add(z, x, y) })
}

func BenchmarkAxpy1M(b *testing.B) {
	benchElementwise(b, 1<<20, 3, func(dev *cpu.Device, x, y, _ *tensor.Tensor) { dev.Axpy(1e-3, x, y) })
}
