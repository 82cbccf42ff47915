package tensortest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// newRand returns a generator with a fixed seed, so that every failure
// reproduces.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// randSlice returns n values uniform in [-1, 1).
func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.Float64()*2 - 1)
	}
	return s
}

// widen converts float32 data to float64 for a reference computation.
func widen(s []float32) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
}

// upload allocates a tensor of the given shape on dev holding data.
func upload(dev tensor.Device, cat tensor.Category, shape tensor.Shape, data []float32) *tensor.Tensor {
	return tensor.FromHost(dev, cat, shape, data)
}

// guardElems is how many guard values surround every output in the tests.
const guardElems = 7

// guardValue fills the guard regions; a kernel that writes out of bounds
// overwrites it.
const guardValue = float32(-1234.5)

// guarded is an output tensor with guard values before and after it in
// the same storage.
type guarded struct {
	T     *tensor.Tensor // the output, a view into whole
	whole *tensor.Tensor
	n     int
}

// newGuarded allocates an output of the given shape surrounded by guard
// values. init, when not nil, gives the output's initial contents
// (accumulating kernels add to it); otherwise it holds guardValue too, so
// that a kernel that fails to write an element is caught.
func newGuarded(dev tensor.Device, cat tensor.Category, shape tensor.Shape, init []float32) *guarded {
	n := shape.Numel()
	whole := dev.Alloc(cat, n+2*guardElems)
	all := make([]float32, n+2*guardElems)
	for i := range all {
		all[i] = guardValue
	}
	if init != nil {
		copy(all[guardElems:], init)
	}
	dev.Upload(whole, all)
	flat := whole.Slice(guardElems, guardElems+n)
	view := flat.Reshape(shape...)
	flat.Release()
	return &guarded{T: view, whole: whole, n: n}
}

// check fails the test if a guard value changed, and returns the output.
func (g *guarded) check(t *testing.T, what string) []float32 {
	t.Helper()
	all := tensor.ToHost(g.whole)
	for i := 0; i < guardElems; i++ {
		if all[i] != guardValue {
			t.Errorf("%s: guard before the output overwritten at -%d: %v", what, guardElems-i, all[i])
			break
		}
	}
	for i := guardElems + g.n; i < len(all); i++ {
		if all[i] != guardValue {
			t.Errorf("%s: guard after the output overwritten at +%d: %v", what, i-guardElems-g.n, all[i])
			break
		}
	}
	return all[guardElems : guardElems+g.n]
}

// release frees the output and its guards.
func (g *guarded) release() {
	g.T.Release()
	g.whole.Release()
}

// compare fails the test unless every got[i] is within atol + rtol·|want[i]|
// of want[i] (with both tolerances 0, exactly equal); a NaN must be matched
// by a NaN. It reports the worst element.
func compare(t *testing.T, what string, got []float32, want []float64, rtol, atol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	worst, at := 0.0, -1
	for i := range got {
		g := float64(got[i])
		if math.IsNaN(g) || math.IsNaN(want[i]) {
			if math.IsNaN(g) != math.IsNaN(want[i]) {
				t.Errorf("%s[%d]: got %v, want %v", what, i, g, want[i])
				return
			}
			continue
		}
		diff := math.Abs(g - want[i])
		if diff == 0 {
			continue
		}
		excess := math.Inf(1) // any difference fails an exact comparison
		if tol := atol + rtol*math.Abs(want[i]); tol > 0 {
			excess = diff / tol
		}
		if excess > worst {
			worst, at = excess, i
		}
	}
	if worst > 1 {
		t.Errorf("%s[%d]: got %v, want %v (error %.3g× the tolerance rtol=%g atol=%g)",
			what, at, got[at], want[at], worst, rtol, atol)
	}
}

// numericGrad returns the central finite-difference gradient of f at x,
// in float64: (f(x+h) − f(x−h)) / 2h per coordinate.
func numericGrad(f func([]float64) float64, x []float64, h float64) []float64 {
	g := make([]float64, len(x))
	for i := range x {
		old := x[i]
		x[i] = old + h
		fp := f(x)
		x[i] = old - h
		fm := f(x)
		x[i] = old
		g[i] = (fp - fm) / (2 * h)
	}
	return g
}

// dot returns Σ a[i]·b[i]; tests turn a tensor-valued function into the
// scalar f(x) = ⟨y(x), r⟩ whose gradient is the backward pass of r.
func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func shapeName(s tensor.Shape) string { return fmt.Sprint(s) }
