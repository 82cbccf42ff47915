package cpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
	"github.com/pipecast/pipecast/tensor/reference"
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

// TestSoftmaxCrossEntropyLongRows checks rows longer than the exponentials
// a thread keeps, which hold them in the gradient, against the
// float64 reference, next to rows short enough to keep them.
func TestSoftmaxCrossEntropyLongRows(t *testing.T) {
	for _, classes := range []int{1000, 3000} {
		dev := cpu.New(tensor.Options{Threads: 2})
		const n, scale = 5, 0.5
		rng := rand.New(rand.NewPCG(uint64(classes), 3))
		host := make([]float32, n*classes)
		wide := make([]float64, len(host))
		for i := range host {
			host[i] = float32(rng.Float64()*20 - 10)
			wide[i] = float64(host[i])
		}
		labels := make([]int32, n)
		for i := range labels {
			labels[i] = int32(rng.IntN(classes))
		}
		logits := dev.Alloc(tensor.Activations, n, classes)
		dlogits := dev.Alloc(tensor.Gradients, n, classes)
		dev.Upload(logits, host)
		loss := dev.SoftmaxCrossEntropy(logits, labels, dlogits, scale)
		wantLoss, wantGrad := reference.SoftmaxCrossEntropy(wide, n, classes, labels, scale)
		if math.Abs(loss-wantLoss) > 1e-9*math.Abs(wantLoss) {
			t.Errorf("classes %d: loss %v, want %v", classes, loss, wantLoss)
		}
		got := make([]float32, n*classes)
		dev.Download(got, dlogits)
		// A kept row's gradient is one rounding from float64: within
		// half an ulp of float32 (6e-8), plus float64 round-off
		// (relative to scale) for the label's entry, which subtracts
		// scale. A long row's are two: its exponentials wait in the
		// gradient as float32, then are scaled, so within an ulp
		// (1.2e-7) but for the label's entry, still computed from
		// float64.
		ulps := 6e-8
		if classes > 1024 {
			ulps = 1.2e-7
		}
		for i, g := range got {
			if w := wantGrad[i]; math.Abs(float64(g)-w) > ulps*math.Abs(w)+1e-15 {
				t.Fatalf("classes %d: dlogits[%d] = %v, want %v", classes, i, g, w)
			}
		}
		logits.Release()
		dlogits.Release()
		dev.Close()
	}
}

func BenchmarkSoftmaxCrossEntropy50257N64(b *testing.B) { benchSoftmaxCrossEntropy(b, 50257, 64) }
