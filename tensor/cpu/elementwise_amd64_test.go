//go:build amd64 && !noasm

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// TestElementwiseSIMDMatchesGo checks the AVX2 loops of ReLU's forward and
// backward and of Add against the Go loops, bit for bit, over lengths
// around multiples of 8 and values that include ±0, ±Inf, NaN and
// subnormals.
func TestElementwiseSIMDMatchesGo(t *testing.T) {
	if !elemSIMD {
		t.Skip("the CPU has no AVX2")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(1), math.Float32frombits(0x80000001), -1e-38, 1e-38}
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			if rng.IntN(4) == 0 {
				v[i] = special[rng.IntN(len(special))]
			} else {
				v[i] = float32(rng.NormFloat64())
			}
		}
		return v
	}
	d := New(tensor.Options{Threads: 1})
	defer d.Close()
	fromHost := func(v []float32) *tensor.Tensor {
		return tensor.FromHost(d, tensor.Activations, tensor.Shape{len(v)}, v)
	}
	for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 64, 100, 1031} {
		x, dy, b := vals(n), vals(n), vals(n)
		check := func(name string, got, want []float32) {
			t.Helper()
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s n=%d element %d: %v (%#x), Go loop %v (%#x)", name, n, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		}
		run := func(simd bool) (y, dx, sum []float32) {
			old := elemSIMD
			elemSIMD = simd
			defer func() { elemSIMD = old }()
			tx, tdy, tb := fromHost(x), fromHost(dy), fromHost(b)
			ty, tdx, tsum := fromHost(make([]float32, n)), fromHost(make([]float32, n)), fromHost(make([]float32, n))
			d.ReLUForward(tx, ty)
			d.ReLUBackward(tx, tdy, tdx)
			d.Add(tsum, tx, tb)
			return Data(ty), Data(tdx), Data(tsum)
		}
		y, dx, sum := run(true)
		wy, wdx, wsum := run(false)
		check("relu forward", y, wy)
		check("relu backward", dx, wdx)
		// NaN + anything is a NaN whose payload x86 takes from one operand
		// or the other; both loops add a + b in that order, so the bits
		// agree.
		check("add", sum, wsum)
	}
}
