package cpu_test

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// benchReLU times a ReLU over n elements, half of them negative; the
// bytes counted are each tensor once (x and y forward; y, dy and dx
// backward).
func benchReLU(b *testing.B, n int, backward bool) {
	dev := newNormBenchDevice(b)
	x := benchUniform(dev, -1, 1, n)
	dy := benchUniform(dev, -1, 1, n)
	y := dev.Alloc(tensor.Activations, n)
	defer x.Release()
	defer dy.Release()
	defer y.Release()
	b.SetBytes(2 * x.Bytes())
	if backward {
		b.SetBytes(3 * x.Bytes())
	}
	b.ResetTimer()
	for b.Loop() {
		if backward {
			dev.ReLUBackward(x, dy, y)
		} else {
			dev.ReLUForward(x, y)
		}
	}
}

func BenchmarkReLUForward1M(b *testing.B) { benchReLU(b, 1<<20, false) }

func BenchmarkReLUBackward1M(b *testing.B) { benchReLU(b, 1<<20, true) }
