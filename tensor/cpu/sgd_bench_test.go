package cpu_test

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// benchSGDStep times a momentum step on n parameters: w and buf are read
// and written, g read.
func benchSGDStep(b *testing.B, n int) {
	dev := newElementwiseBenchDevice(b)
	w := dev.Alloc(tensor.Weights, n)
	g := dev.Alloc(tensor.Gradients, n)
	buf := dev.Alloc(tensor.Optimizer, n)
	defer w.Release()
	defer g.Release()
	defer buf.Release()
	dev.Fill(g, 1e-3)
	p := tensor.SGDParams{LR: 0.1, Momentum: 0.9, WeightDecay: 1e-4}
	dev.SGDStep(w, g, buf, p, true)
	b.SetBytes(5 * w.Bytes())
	b.ResetTimer()
	for b.Loop() {
		dev.SGDStep(w, g, buf, p, false)
	}
}

func BenchmarkSGDStep1M(b *testing.B) { benchSGDStep(b, 1<<20) }
