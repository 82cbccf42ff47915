package tensortest

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

// elementwiseSizes are the lengths every elementwise kernel is tested at:
// odd sizes that leave remainders in any unrolled loop, and one above
// three times the CPU backend's parallel grain (1<<14), so that a pool of
// three threads splits it.
var elementwiseSizes = []int{1, 2, 3, 5, 10, 11, 50, 1001, 3<<14 + 7}

func testElementwise(t *testing.T, dev tensor.Device) {
	rng := newRand(3)
	for _, n := range elementwiseSizes {
		shape := tensor.Shape{n}
		a, b := randSlice(rng, n), randSlice(rng, n)
		xa := upload(dev, tensor.Activations, shape, a)
		xb := upload(dev, tensor.Activations, shape, b)
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			g := newGuarded(dev, tensor.Activations, shape, a)
			dev.Scale(g.T, -0.75)
			compare(t, "Scale", g.check(t, "Scale"), reference.Scale(widen(a), -0.75), elementwiseRTol, elementwiseATol)
			g.release()

			want := reference.Add(widen(a), widen(b))
			g = newGuarded(dev, tensor.Activations, shape, nil)
			dev.Add(g.T, xa, xb)
			compare(t, "Add", g.check(t, "Add"), want, elementwiseRTol, elementwiseATol)
			g.release()
			// In place, y aliasing either operand.
			g = newGuarded(dev, tensor.Activations, shape, a)
			dev.Add(g.T, g.T, xb)
			compare(t, "Add into a", g.check(t, "Add into a"), want, elementwiseRTol, elementwiseATol)
			g.release()
			g = newGuarded(dev, tensor.Activations, shape, b)
			dev.Add(g.T, xa, g.T)
			compare(t, "Add into b", g.check(t, "Add into b"), want, elementwiseRTol, elementwiseATol)
			g.release()

			g = newGuarded(dev, tensor.Gradients, shape, b)
			dev.Axpy(1.5, xa, g.T)
			compare(t, "Axpy", g.check(t, "Axpy"), reference.Axpy(1.5, widen(a), widen(b)), elementwiseRTol, elementwiseATol)
			g.release()
		})
		xa.Release()
		xb.Release()
	}
	testElementwiseShapes(t, dev)
}

// testElementwiseShapes checks that kernels refuse operands whose shapes
// differ, even with equal element counts.
func testElementwiseShapes(t *testing.T, dev tensor.Device) {
	a := dev.Alloc(tensor.Activations, 2, 3)
	b := dev.Alloc(tensor.Activations, 3, 2)
	c := dev.Alloc(tensor.Activations, 7)
	defer a.Release()
	defer b.Release()
	defer c.Release()
	tests := []struct {
		name string
		fn   func()
	}{
		{"Add transposed", func() { dev.Add(a, a, b) }},
		{"Add longer output", func() { dev.Add(c, a, a) }},
		{"Axpy transposed", func() { dev.Axpy(1, b, a) }},
		{"Axpy shorter x", func() { dev.Axpy(1, a, c) }},
	}
	for _, tc := range tests {
		checkKernelPanics(t, tc.name, tc.fn)
	}
}

// checkKernelPanics fails the test unless fn panics: kernels panic on
// arguments no correct caller passes.
func checkKernelPanics(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: did not panic", what)
		}
	}()
	fn()
}
