package cpu_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

func BenchmarkGemm64(b *testing.B)        { benchGemm(b, false, false, 64, 64, 64) }
func BenchmarkGemm256(b *testing.B)       { benchGemm(b, false, false, 256, 256, 256) }
func BenchmarkGemm1024(b *testing.B)      { benchGemm(b, false, false, 1024, 1024, 1024) }
func BenchmarkGemmTransA256(b *testing.B) { benchGemm(b, true, false, 256, 256, 256) }
func BenchmarkGemmTransB256(b *testing.B) { benchGemm(b, false, true, 256, 256, 256) }

// benchGemm times c = a·b (op(a) m×k, op(b) k×n) on a device with a
// thread per core.
func benchGemm(b *testing.B, transA, transB bool, m, n, k int) {
	dev := benchDevice(b)
	aShape, bShape := []int{m, k}, []int{k, n}
	if transA {
		aShape = []int{k, m}
	}
	if transB {
		bShape = []int{n, k}
	}
	x, y := benchTensor(dev, aShape...), benchTensor(dev, bShape...)
	c := dev.Alloc(tensor.Activations, m, n)
	defer x.Release()
	defer y.Release()
	defer c.Release()
	for b.Loop() {
		dev.Gemm(transA, transB, 1, x, y, 0, c)
	}
	reportGFLOPS(b, 2*float64(m)*float64(n)*float64(k))
}

// benchDevice opens a CPU device with one thread per core, closed when
// the benchmark ends.
func benchDevice(b *testing.B) *cpu.Device {
	dev := cpu.New(tensor.Options{Threads: runtime.NumCPU()})
	b.Cleanup(func() { dev.Close() })
	return dev
}

// benchTensor allocates a tensor of the given shape holding values
// uniform in [−1, 1) from a fixed seed.
func benchTensor(dev *cpu.Device, shape ...int) *tensor.Tensor {
	rng := rand.New(rand.NewPCG(1, 2))
	t := dev.Alloc(tensor.Activations, shape...)
	data := make([]float32, t.Len())
	for i := range data {
		data[i] = float32(rng.Float64()*2 - 1)
	}
	dev.Upload(t, data)
	return t
}

// reportGFLOPS reports the benchmark's rate given the floating-point
// operations of one iteration (a multiply-add counts as two).
func reportGFLOPS(b *testing.B, flops float64) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(flops*float64(b.N)/s/1e9, "GFLOP/s")
	}
}

func BenchmarkGemm512(b *testing.B)  { benchGemm(b, false, false, 512, 512, 512) }
func BenchmarkGemm2048(b *testing.B) { benchGemm(b, false, false, 2048, 2048, 2048) }

// BenchmarkGemmSerial times one thread's square products: the
// micro-kernel's and the packing's own speed, without the pool.
func BenchmarkGemmSerial(b *testing.B) {
	dev := cpu.New(tensor.Options{Threads: 1})
	b.Cleanup(func() { dev.Close() })
	for _, n := range []int{64, 256, 512, 1024} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			x, y := benchTensor(dev, n, n), benchTensor(dev, n, n)
			c := dev.Alloc(tensor.Activations, n, n)
			defer x.Release()
			defer y.Release()
			defer c.Release()
			for b.Loop() {
				dev.Gemm(false, false, 1, x, y, 0, c)
			}
			reportGFLOPS(b, 2*float64(n)*float64(n)*float64(n))
		})
	}
}
