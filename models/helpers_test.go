package models

// The helpers of the package's own tests. Tests in package models cannot
// import models/modeltest (it imports models), so the few they share with
// it are repeated here; tests that need the suite's checks or its
// reference model are in package models_test.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

// newDevice opens the CPU device the tests run on and closes it when the
// test ends.
func newDevice(t *testing.T) tensor.Device {
	t.Helper()
	dev := cpu.New(tensor.Options{Threads: 2})
	t.Cleanup(func() { dev.Close() })
	return dev
}

// newRand returns a generator with a fixed seed, so that every failure
// reproduces.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6d6f64656c73)) }

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

// host returns a tensor's elements in float64.
func host(t *tensor.Tensor) []float64 { return widen(tensor.ToHost(t)) }

// uploadRand allocates a tensor of the given shape in category cat
// holding values uniform in [-1, 1) and returns it with its float64
// copy. Tests upload inputs outside the Activations category, so that
// Activations shows only what layers allocate.
func uploadRand(dev tensor.Device, cat tensor.Category, rng *rand.Rand, shape ...int) (*tensor.Tensor, []float64) {
	data := randSlice(rng, tensor.Shape(shape).Numel())
	return tensor.FromHost(dev, cat, shape, data), widen(data)
}

// compare fails the test unless every got[i] is within rtol·|want[i]| +
// atol·max|want| of want[i]. The absolute part scales with the largest
// expected value because float32 errors in sums and in cancelling
// differences are relative to the magnitude of the terms, which the
// largest result approximates. It reports the worst element.
func compare(t *testing.T, what string, got, want []float64, rtol, atol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d values, want %d", what, len(got), len(want))
		return
	}
	scale := maxAbs(want)
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

// equalValues fails the test unless got and want are identical.
func equalValues(t *testing.T, what string, got, want []float64) {
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

// checkLive fails the test unless the device's live bytes in cat are
// want.
func checkLive(t *testing.T, dev tensor.Device, what string, cat tensor.Category, want int64) {
	t.Helper()
	if got := dev.Memory().LiveBytes[cat]; got != want {
		t.Errorf("%s: %d bytes live in %s, want %d", what, got, cat, want)
	}
}

// checkNoLeak fails the test unless nothing at all is live on dev.
func checkNoLeak(t *testing.T, dev tensor.Device) {
	t.Helper()
	if m := dev.Memory(); m.LiveTotalBytes != 0 {
		t.Errorf("%s: %d bytes still live (by category %v)", dev.Name(), m.LiveTotalBytes, m.LiveBytes)
	}
}

// mustPanic fails the test unless fn panics with a message containing
// want.
func mustPanic(t *testing.T, what, want string, fn func()) {
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

// maxAbs returns the largest magnitude in v.
func maxAbs(v []float64) float64 {
	m := 0.0
	for _, e := range v {
		m = max(m, math.Abs(e))
	}
	return m
}

// randomizeParams gives l's parameters values uniform in [−1, 1) and its
// running statistics plausible ones (means in [−0.5, 0.5), variances in
// [0.5, 1.5)), as modeltest.RandomizeParams does.
func randomizeParams(dev tensor.Device, l Layer, rng *rand.Rand) {
	for _, p := range Params(l) {
		Uniform(dev, p.Param.Value, -1, 1, rng)
	}
	for _, b := range Buffers(l) {
		switch b.Buffer.Name {
		case "running_mean":
			Uniform(dev, b.Buffer.Value, -0.5, 0.5, rng)
		case "running_var":
			Uniform(dev, b.Buffer.Value, 0.5, 1.5, rng)
		}
	}
}
