package tensortest

import (
	"fmt"
	"math"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

func testDropout(t *testing.T, dev tensor.Device) {
	rng := newRand(5)
	key := tensor.DropoutKey{Seed: 42, Step: 7, Layer: 3, Sample: 10}
	shapes := []tensor.Shape{{1, 1}, {2, 1}, {3, 5}, {1, 10}, {11, 1}, {5, 10}, {7, 11}, {1, 1001},
		{2, 3, 5, 7},
		{3, 3<<14 + 7}, // over three times the CPU grain: split mid-sample
		{1, 3<<14 + 1}, // one sample, still split
	}
	for _, shape := range shapes {
		for _, p := range []float32{0, 0.1, 0.5, 0.9, 1} {
			t.Run(fmt.Sprintf("%v/p=%v", shape, p), func(t *testing.T) {
				n := shape[0]
				xs := randSlice(rng, shape.Numel())
				x := upload(dev, tensor.Activations, shape, xs)
				y := newGuarded(dev, tensor.Activations, shape, nil)
				// p = 0 must copy and p = 1 zero exactly.
				rtol, atol := elementwiseRTol, elementwiseATol
				if p == 0 || p == 1 {
					rtol, atol = 0, 0
				}
				dev.DropoutForward(x, y.T, p, key)
				got := y.check(t, "DropoutForward")
				compare(t, "DropoutForward", got, reference.DropoutForward(widen(xs), n, p, key), rtol, atol)

				dys := randSlice(rng, shape.Numel())
				dy := upload(dev, tensor.Gradients, shape, dys)
				dx := newGuarded(dev, tensor.Gradients, shape, nil)
				dev.DropoutBackward(dy, dx.T, p, key)
				gotDx := dx.check(t, "DropoutBackward")
				compare(t, "DropoutBackward", gotDx, reference.DropoutBackward(widen(dys), n, p, key), rtol, atol)
				// The backward drops exactly what the forward dropped
				// (the inputs are never exactly 0).
				for i := range got {
					if (got[i] == 0) != (gotDx[i] == 0) {
						t.Errorf("element %d: forward gave %v, backward %v: masks differ", i, got[i], gotDx[i])
						break
					}
				}
				x.Release()
				dy.Release()
				y.release()
				dx.release()
			})
		}
	}
	t.Run("micro-batches", func(t *testing.T) { testDropoutMicroBatches(t, dev) })
	t.Run("kept fraction", func(t *testing.T) { testDropoutKeptFraction(t, dev) })
	checkKernelPanics(t, "DropoutForward p=-0.1", func() { testDropoutWith(dev, -0.1) })
	checkKernelPanics(t, "DropoutForward p=1.5", func() { testDropoutWith(dev, 1.5) })
	checkKernelPanics(t, "DropoutForward p=NaN", func() { testDropoutWith(dev, float32(math.NaN())) })
}

// testDropoutWith runs a dropout of probability p on a small tensor.
func testDropoutWith(dev tensor.Device, p float32) {
	x := dev.Alloc(tensor.Activations, 2, 3)
	y := dev.Alloc(tensor.Activations, 2, 3)
	defer x.Release()
	defer y.Release()
	dev.DropoutForward(x, y, p, tensor.DropoutKey{})
}

// testDropoutMicroBatches checks that the mask of a mini-batch is the
// masks of its micro-batches, each keyed by the index of its first
// sample: the property that lets every schedule drop the same units.
func testDropoutMicroBatches(t *testing.T, dev tensor.Device) {
	const n, row, half = 6, 4000, 2
	key := tensor.DropoutKey{Seed: 1, Step: 2, Layer: 5, Sample: 12}
	xs := randSlice(newRand(6), n*row)
	x := upload(dev, tensor.Activations, tensor.Shape{n, row}, xs)
	defer x.Release()
	whole := dev.Alloc(tensor.Activations, n, row)
	defer whole.Release()
	dev.DropoutForward(x, whole, 0.5, key)
	want := tensor.ToHost(whole)
	for _, cut := range [][2]int{{0, half}, {half, n}} {
		part := x.Slice(cut[0], cut[1])
		y := newGuarded(dev, tensor.Activations, part.Shape(), nil)
		k := key
		k.Sample += cut[0]
		dev.DropoutForward(part, y.T, 0.5, k)
		what := fmt.Sprintf("samples [%d, %d)", cut[0], cut[1])
		compare(t, what, y.check(t, what), widen(want[cut[0]*row:cut[1]*row]), 0, 0)
		part.Release()
		y.release()
	}
}

// testDropoutKeptFraction checks that about 1 − p of the elements
// survive: the count of kept elements is binomial, so it lies within 4
// standard deviations of its mean unless the hash is biased (a false
// alarm has a probability near 6e-5 per case).
func testDropoutKeptFraction(t *testing.T, dev tensor.Device) {
	const n, row = 16, 6250 // 1e5 elements
	ones := make([]float32, n*row)
	for i := range ones {
		ones[i] = 1
	}
	x := upload(dev, tensor.Activations, tensor.Shape{n, row}, ones)
	defer x.Release()
	y := dev.Alloc(tensor.Activations, n, row)
	defer y.Release()
	for _, p := range []float32{0.05, 0.2, 0.5, 0.8} {
		dev.DropoutForward(x, y, p, tensor.DropoutKey{Seed: 9, Layer: 1})
		kept := 0
		for _, v := range tensor.ToHost(y) {
			if v != 0 {
				kept++
			}
		}
		total := float64(n * row)
		q := 1 - float64(p)
		if sd := math.Sqrt(total * q * (1 - q)); math.Abs(float64(kept)-total*q) > 4*sd {
			t.Errorf("p=%v: kept %d of %.0f, want %.0f ± %.0f", p, kept, total, total*q, 4*sd)
		}
	}
}
