package tensortest

import (
	"fmt"
	"math"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

func testSoftmaxCrossEntropy(t *testing.T, dev tensor.Device) {
	rng := newRand(7)
	for _, classes := range []int{1, 2, 10, 1000} {
		for _, n := range []int{1, 7} {
			// At magnitude 80 the row's exponentials span e^±80, within a
			// factor 1e4 of float32's largest value; at 100 float32's exp
			// overflows (e^100 ≈ 2.7e43), at 1000 float64's does too, so
			// only a log-sum-exp shifted by the row's maximum survives.
			for _, magnitude := range []float32{1, 80, 100, 1000} {
				name := fmt.Sprintf("classes=%d/n=%d/magnitude=%v", classes, n, magnitude)
				t.Run(name, func(t *testing.T) {
					logits := randSlice(rng, n*classes)
					for i := range logits {
						logits[i] *= magnitude
					}
					labels := make([]int32, n)
					for i := range labels {
						labels[i] = int32(rng.IntN(classes))
					}
					scale := 1 / float32(n)
					x := upload(dev, tensor.Activations, tensor.Shape{n, classes}, logits)
					defer x.Release()
					wantLoss, wantGrad := reference.SoftmaxCrossEntropy(widen(logits), n, classes, labels, float64(scale))

					g := newGuarded(dev, tensor.Gradients, tensor.Shape{n, classes}, nil)
					defer g.release()
					loss := dev.SoftmaxCrossEntropy(x, labels, g.T, scale)
					checkSoftmaxLoss(t, loss, wantLoss)
					compare(t, "dlogits", g.check(t, "dlogits"), wantGrad, softmaxGradRTol, softmaxGradATol)

					// Without dlogits, the same loss.
					checkSoftmaxLoss(t, dev.SoftmaxCrossEntropy(x, labels, nil, scale), wantLoss)
				})
			}
		}
	}
	t.Run("parallel", func(t *testing.T) { testSoftmaxParallel(t, dev) })

	x := dev.Alloc(tensor.Activations, 2, 3)
	defer x.Release()
	wrong := dev.Alloc(tensor.Gradients, 3, 2)
	defer wrong.Release()
	tests := []struct {
		name    string
		labels  []int32
		dlogits *tensor.Tensor
	}{
		{"too few labels", []int32{0}, nil},
		{"too many labels", []int32{0, 1, 2}, nil},
		{"negative label", []int32{0, -1}, nil},
		{"label past the classes", []int32{3, 0}, nil},
		{"dlogits of another shape", []int32{0, 1}, wrong},
	}
	for _, tc := range tests {
		checkKernelPanics(t, "SoftmaxCrossEntropy "+tc.name, func() { dev.SoftmaxCrossEntropy(x, tc.labels, tc.dlogits, 1) })
	}
}

// testSoftmaxParallel uses enough rows that a pool splits them, and a
// scale other than 1/N.
func testSoftmaxParallel(t *testing.T, dev tensor.Device) {
	const n, classes, scale = 97, 1001, 0.25
	rng := newRand(8)
	logits := randSlice(rng, n*classes)
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(rng.IntN(classes))
	}
	x := upload(dev, tensor.Activations, tensor.Shape{n, classes}, logits)
	defer x.Release()
	g := newGuarded(dev, tensor.Gradients, tensor.Shape{n, classes}, nil)
	defer g.release()
	wantLoss, wantGrad := reference.SoftmaxCrossEntropy(widen(logits), n, classes, labels, scale)
	checkSoftmaxLoss(t, dev.SoftmaxCrossEntropy(x, labels, g.T, scale), wantLoss)
	compare(t, "dlogits", g.check(t, "dlogits"), wantGrad, softmaxGradRTol, softmaxGradATol)
}

func checkSoftmaxLoss(t *testing.T, got, want float64) {
	t.Helper()
	if !(math.Abs(got-want) <= softmaxLossRTol*math.Abs(want)) {
		t.Errorf("loss: got %.17g, want %.17g", got, want)
	}
}
