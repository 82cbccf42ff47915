package cpu_test

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// VGG16's last layer: 4096 features to 1000 classes.
func BenchmarkLinearForward4096x1000N16(b *testing.B)      { benchLinear(b, "forward", 16, 4096, 1000) }
func BenchmarkLinearBackwardData4096x1000N16(b *testing.B) { benchLinear(b, "data", 16, 4096, 1000) }
func BenchmarkLinearBackwardParams4096x1000N16(b *testing.B) {
	benchLinear(b, "params", 16, 4096, 1000)
}

// benchLinear times one linear kernel (forward, data or params) on a batch
// of n samples.
func benchLinear(b *testing.B, kernel string, n, in, out int) {
	dev := benchDevice(b)
	x, w, bias := benchTensor(dev, n, in), benchTensor(dev, out, in), benchTensor(dev, out)
	y := benchTensor(dev, n, out) // non-zero: gonum skips zero multipliers
	dw, db := dev.Alloc(tensor.Gradients, out, in), dev.Alloc(tensor.Gradients, out)
	for _, t := range []*tensor.Tensor{x, w, bias, y, dw, db} {
		defer t.Release()
	}
	for b.Loop() {
		switch kernel {
		case "forward":
			dev.LinearForward(x, w, bias, y)
		case "data":
			dev.LinearBackwardData(y, w, x)
		case "params":
			dev.LinearBackwardParams(x, y, dw, db)
		default:
			b.Fatalf("unknown linear kernel %q", kernel)
		}
	}
	reportGFLOPS(b, 2*float64(n)*float64(in)*float64(out))
}
