package cpu_test

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// benchSoftmaxCrossEntropy times the loss and its gradient on [n,
// classes] logits; the logits are read and the gradient written.
func benchSoftmaxCrossEntropy(b *testing.B, classes, n int) {
	dev := newElementwiseBenchDevice(b)
	logits := dev.Alloc(tensor.Activations, n, classes)
	dlogits := dev.Alloc(tensor.Gradients, n, classes)
	defer logits.Release()
	defer dlogits.Release()
	host := make([]float32, n*classes)
	for i := range host {
		host[i] = float32(i%97) * 0.1
	}
	dev.Upload(logits, host)
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(i * 31 % classes)
	}
	b.SetBytes(2 * logits.Bytes())
	b.ResetTimer()
	for b.Loop() {
		dev.SoftmaxCrossEntropy(logits, labels, dlogits, 1/float32(n))
	}
}

func BenchmarkSoftmaxCrossEntropy1000N32(b *testing.B) { benchSoftmaxCrossEntropy(b, 1000, 32) }
