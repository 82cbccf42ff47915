package modeltest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
	// Describe measures models on the meta backend, which it opens by
	// name; linking it here serves every test that uses the suite.
	_ "github.com/pipecast/pipecast/tensor/meta"
)

// NewDevice opens the CPU device the tests run on and closes it when the
// test ends.
func NewDevice(t testing.TB) tensor.Device {
	t.Helper()
	dev := cpu.New(tensor.Options{Threads: 2})
	t.Cleanup(func() { dev.Close() })
	return dev
}

// NewRand returns a generator with a fixed seed, so that every failure
// reproduces.
func NewRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6d6f64656c73)) }

// Widen converts float32 data to float64 for a reference computation.
func Widen(s []float32) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
}

// Host returns a tensor's elements in float64.
func Host(t *tensor.Tensor) []float64 { return Widen(tensor.ToHost(t)) }

// UploadRand allocates a tensor of the given shape in category cat
// holding values uniform in [-1, 1) and returns it with its float64
// copy. Tests upload inputs outside the Activations category, so that
// Activations shows only what layers allocate.
func UploadRand(dev tensor.Device, cat tensor.Category, rng *rand.Rand, shape ...int) (*tensor.Tensor, []float64) {
	data := make([]float32, tensor.Shape(shape).Numel())
	for i := range data {
		data[i] = float32(rng.Float64()*2 - 1)
	}
	return tensor.FromHost(dev, cat, shape, data), Widen(data)
}

// UploadTokens is UploadRand for token ids: whole numbers uniform in [0,
// vocab), held as float32 as the embeddings read them.
func UploadTokens(dev tensor.Device, cat tensor.Category, rng *rand.Rand, vocab int, shape ...int) (*tensor.Tensor, []float64) {
	data := make([]float32, tensor.Shape(shape).Numel())
	for i := range data {
		data[i] = float32(rng.IntN(vocab))
	}
	return tensor.FromHost(dev, cat, shape, data), Widen(data)
}

// Compare fails the test unless every got[i] is within rtol·|want[i]| +
// atol·max|want| of want[i]. The absolute part scales with the largest
// expected value because float32 errors in sums and in cancelling
// differences are relative to the magnitude of the terms, which the
// largest result approximates; a gradient element that cancels to near
// zero is judged against that scale. It reports the worst element.
func Compare(t testing.TB, what string, got, want []float64, rtol, atol float64) {
	t.Helper()
	CompareScaled(t, what, got, want, rtol, atol, 0)
}

// CompareScaled is Compare with the absolute part atol·max(max|want|,
// floor): a gradient that cancels to zero everywhere (a bias followed by
// batch norm) is a sum of terms as large as the model's other gradients,
// and its float32 error is relative to those, which floor gives.
func CompareScaled(t testing.TB, what string, got, want []float64, rtol, atol, floor float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d values, want %d", what, len(got), len(want))
		return
	}
	scale := max(floor, MaxAbs(want))
	worst, at := 0.0, -1
	for i := range got {
		if math.IsNaN(got[i]) != math.IsNaN(want[i]) {
			t.Errorf("%s[%d]: got %v, want %v", what, i, got[i], want[i])
			return
		}
		bound := rtol*math.Abs(want[i]) + atol*scale
		excess := math.Abs(got[i] - want[i])
		if bound > 0 {
			excess /= bound
		} else if excess > 0 {
			excess = math.Inf(1)
		}
		if excess > worst {
			worst, at = excess, i
		}
	}
	if worst > 1 {
		t.Errorf("%s[%d]: got %v, want %v (error %.3g× the tolerance rtol=%g atol=%g·%.3g)",
			what, at, got[at], want[at], worst, rtol, atol, scale)
	}
}

// EqualValues fails the test unless got and want are identical.
func EqualValues(t testing.TB, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d values, want %d", what, len(got), len(want))
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s[%d]: got %v, want %v", what, i, got[i], want[i])
			return
		}
	}
}

// MaxAbs returns the largest magnitude in v.
func MaxAbs(v []float64) float64 {
	m := 0.0
	for _, e := range v {
		m = max(m, math.Abs(e))
	}
	return m
}

// CheckLive fails the test unless the device's live bytes in cat are
// want.
func CheckLive(t testing.TB, dev tensor.Device, what string, cat tensor.Category, want int64) {
	t.Helper()
	if got := dev.Memory().LiveBytes[cat]; got != want {
		t.Errorf("%s: %d bytes live in %s, want %d", what, got, cat, want)
	}
}

// CheckNoLeak fails the test unless nothing at all is live on dev.
func CheckNoLeak(t testing.TB, dev tensor.Device) {
	t.Helper()
	if m := dev.Memory(); m.LiveTotalBytes != 0 {
		t.Errorf("%s: %d bytes still live (by category %v)", dev.Name(), m.LiveTotalBytes, m.LiveBytes)
	}
}

// MustPanic fails the test unless fn panics with a message containing
// want.
func MustPanic(t testing.TB, what, want string, fn func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("%s: no panic, want one mentioning %q", what, want)
			return
		}
		if msg := fmt.Sprint(r); !strings.Contains(msg, want) {
			t.Errorf("%s: panic %v, want one mentioning %q", what, r, want)
		}
	}()
	fn()
}

// numericGrad returns the central finite-difference gradient of f at x,
// in float64: (f(x+h) − f(x−h)) / 2h per coordinate.
func numericGrad(f func() float64, x []float64, h float64) []float64 {
	g := make([]float64, len(x))
	for i := range x {
		old := x[i]
		x[i] = old + h
		fp := f()
		x[i] = old - h
		fm := f()
		x[i] = old
		g[i] = (fp - fm) / (2 * h)
	}
	return g
}

// dot returns Σ a[i]·b[i]; checks turn a tensor-valued function into the
// scalar ⟨y(x), dy⟩, whose gradient is the backward pass of dy.
func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
