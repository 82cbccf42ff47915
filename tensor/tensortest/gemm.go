package tensortest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

// gemmSizes are the matrix sizes every GEMM dimension sweeps: tiny, odd,
// and past a 32-wide vector loop.
var gemmSizes = []int{1, 2, 3, 5, 10, 11, 50}

// gemmBetas are the beta values the sweep cycles through: 0 (c is
// overwritten, its old contents ignored), 1 (accumulation) and a scaling.
var gemmBetas = []float32{0, 1, 0.5}

func testGemm(t *testing.T, dev tensor.Device) {
	rng := newRand(11)
	for _, tr := range []struct{ a, b bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		t.Run(fmt.Sprintf("transA=%v,transB=%v", tr.a, tr.b), func(t *testing.T) {
			// The full cube of sizes, with beta and alpha cycling so that
			// every beta meets many shapes.
			i := 0
			for _, m := range gemmSizes {
				for _, n := range gemmSizes {
					for _, k := range gemmSizes {
						alpha := []float32{0.75, -1.5}[i%2]
						gemmCase(t, dev, rng, tr.a, tr.b, m, n, k, alpha, gemmBetas[i%len(gemmBetas)])
						i++
					}
				}
			}
			// C larger than one tile in both directions (64 rows, 192
			// columns), so that tiling and its spread over threads run.
			for _, beta := range gemmBetas {
				gemmCase(t, dev, rng, tr.a, tr.b, 130, 200, 70, -0.5, beta)
			}
		})
	}
	t.Run("bad shapes panic", func(t *testing.T) { testGemmPanics(t, dev) })
}

// gemmCase checks one product against the float64 reference. With beta 0
// c starts as the guard value, which must not leak into the result;
// otherwise it starts random.
func gemmCase(t *testing.T, dev tensor.Device, rng *rand.Rand, transA, transB bool, m, n, k int, alpha, beta float32) {
	t.Helper()
	aShape, bShape := tensor.Shape{m, k}, tensor.Shape{k, n}
	if transA {
		aShape = tensor.Shape{k, m}
	}
	if transB {
		bShape = tensor.Shape{n, k}
	}
	ah, bh := randSlice(rng, m*k), randSlice(rng, k*n)
	var ch []float32
	if beta != 0 {
		ch = randSlice(rng, m*n)
	}
	a := upload(dev, tensor.Activations, aShape, ah)
	b := upload(dev, tensor.Activations, bShape, bh)
	c := newGuarded(dev, tensor.Activations, tensor.Shape{m, n}, ch)
	defer a.Release()
	defer b.Release()
	defer c.release()

	dev.Gemm(transA, transB, alpha, a, b, beta, c.T)
	what := fmt.Sprintf("gemm m=%d n=%d k=%d alpha=%v beta=%v", m, n, k, alpha, beta)
	var cRef []float64
	if ch != nil {
		cRef = widen(ch)
	}
	want := reference.Gemm(transA, transB, m, n, k, float64(alpha), widen(ah), widen(bh), float64(beta), cRef)
	compare(t, what, c.check(t, what), want, reductionRTol, reductionATol)
}

func testGemmPanics(t *testing.T, dev tensor.Device) {
	tests := []struct {
		name           string
		a, b, c        tensor.Shape
		transA, transB bool
	}{
		{name: "inner dimensions differ", a: tensor.Shape{2, 3}, b: tensor.Shape{4, 5}, c: tensor.Shape{2, 5}},
		{name: "c has the wrong rows", a: tensor.Shape{2, 3}, b: tensor.Shape{3, 5}, c: tensor.Shape{3, 5}},
		{name: "transA ignored", a: tensor.Shape{2, 3}, b: tensor.Shape{3, 5}, c: tensor.Shape{2, 5}, transA: true},
		{name: "transB ignored", a: tensor.Shape{2, 3}, b: tensor.Shape{3, 5}, c: tensor.Shape{2, 5}, transB: true},
		{name: "3-D operand", a: tensor.Shape{2, 3, 1}, b: tensor.Shape{3, 5}, c: tensor.Shape{2, 5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := dev.Alloc(tensor.Activations, tc.a...)
			b := dev.Alloc(tensor.Activations, tc.b...)
			c := dev.Alloc(tensor.Activations, tc.c...)
			defer a.Release()
			defer b.Release()
			defer c.Release()
			gemmMustPanic(t, "gemm", func() { dev.Gemm(tc.transA, tc.transB, 1, a, b, 0, c) })
		})
	}
}

// gemmMustPanic fails the test unless fn panics: a kernel given
// mismatched shapes must refuse them rather than read or write out of
// bounds.
func gemmMustPanic(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: got no panic, want one", what)
		}
	}()
	fn()
}
