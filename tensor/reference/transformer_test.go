package reference

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// byHandTol bounds the by-hand checks below, whose expected values are
// computed by the test in float64 in another order than the reference:
// a few ulps of values of order one.
const byHandTol = 1e-14

func TestEmbeddingByHand(t *testing.T) {
	table := []float64{1, 2, 3, 4, 5, 6} // three tokens of width 2
	ids := []int{2, 0, 2}
	closeTo(t, "y", Embedding(ids, table, 2), []float64{5, 6, 1, 2, 5, 6}, 0, 0)
	// Token 2's two rows sum; token 1, absent, gets no gradient.
	dtable := EmbeddingBackward(ids, []float64{1, 2, 3, 4, 5, 6}, 3, 2)
	closeTo(t, "dtable", dtable, []float64{3, 4, 0, 0, 6, 8}, 0, 0)
}

func TestEmbeddingBadIDPanics(t *testing.T) {
	for _, id := range []int{-1, 3} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("id %d of 3 tokens: no panic", id)
				}
			}()
			Embedding([]int{0, id}, make([]float64, 6), 2)
		}()
	}
}

func TestLayerNormByHand(t *testing.T) {
	// One row 1, 2, 3, 4: mean 2.5, biased variance 1.25.
	r := LayerNorm([]float64{1, 2, 3, 4}, []float64{1, 1, 1, 2}, []float64{0, 0, 0, 1}, 0.25)
	rstd := 1 / math.Sqrt(1.25+0.25)
	closeTo(t, "mean", r.Mean, []float64{2.5}, byHandTol, 0)
	closeTo(t, "rstd", r.Rstd, []float64{rstd}, byHandTol, 0)
	closeTo(t, "y", r.Y, []float64{-1.5 * rstd, -0.5 * rstd, 0.5 * rstd, 1.5*rstd*2 + 1}, byHandTol, byHandTol)
}

func TestRMSNormByHand(t *testing.T) {
	// One row 3, 4: mean square 12.5.
	y, rstd := RMSNorm([]float64{3, 4}, []float64{1, 2}, 0.5)
	r := 1 / math.Sqrt(12.5+0.5)
	closeTo(t, "rstd", rstd, []float64{r}, byHandTol, 0)
	closeTo(t, "y", y, []float64{3 * r, 8 * r}, byHandTol, 0)
}

func TestNormBackwardsMatchFiniteDifferences(t *testing.T) {
	tests := []struct {
		name   string
		n, d   int
		offset float64 // added to every input
		// eps keeps rows of one value smooth at the scale of the
		// finite differences' step: RMSNorm of x alone is x/√(x² + eps),
		// whose curvature near 0 grows as eps shrinks.
		eps float64
	}{
		{"one row", 1, 5, 0, 1e-5},
		{"width 1", 4, 1, 0, 0.25},
		{"odd rows", 3, 7, 0, 1e-5},
		{"offset 10", 2, 6, 10, 1e-5},
	}
	for k, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(k), 7))
			x := uniform(rng, tc.n*tc.d, tc.offset-1, tc.offset+1)
			gamma, beta := uniform(rng, tc.d, 0.5, 2), uniform(rng, tc.d, -1, 1)
			dy := uniform(rng, len(x), -1, 1)
			eps := tc.eps

			ln := LayerNorm(x, gamma, beta, eps)
			dx, dgamma, dbeta := LayerNormBackward(x, dy, gamma, ln.Mean, ln.Rstd)
			lnOf := func(x, gamma, beta []float64) float64 { return dot(LayerNorm(x, gamma, beta, eps).Y, dy) }
			closeTo(t, "layer norm dx", dx, numericGrad(func(v []float64) float64 { return lnOf(v, gamma, beta) }, x, bnGradStep), bnGradRTol, bnGradATol)
			closeTo(t, "layer norm dgamma", dgamma, numericGrad(func(v []float64) float64 { return lnOf(x, v, beta) }, gamma, bnGradStep), bnGradRTol, bnGradATol)
			closeTo(t, "layer norm dbeta", dbeta, numericGrad(func(v []float64) float64 { return lnOf(x, gamma, v) }, beta, bnGradStep), bnGradRTol, bnGradATol)

			_, rstd := RMSNorm(x, gamma, eps)
			dx, dgamma = RMSNormBackward(x, dy, gamma, rstd)
			rmsOf := func(x, gamma []float64) float64 { y, _ := RMSNorm(x, gamma, eps); return dot(y, dy) }
			closeTo(t, "rms norm dx", dx, numericGrad(func(v []float64) float64 { return rmsOf(v, gamma) }, x, bnGradStep), bnGradRTol, bnGradATol)
			closeTo(t, "rms norm dgamma", dgamma, numericGrad(func(v []float64) float64 { return rmsOf(x, v) }, gamma, bnGradStep), bnGradRTol, bnGradATol)
		})
	}
}

func TestGELUTanhByHand(t *testing.T) {
	xs := []float64{-6, -3, -1, -0.25, 0, 0.25, 1, 3, 6}
	y := GELUTanh(xs)
	neg := GELUTanh(scaled(xs, -1))
	for i, x := range xs {
		// ½x(1 + t) − ½(−x)(1 − t) = x: the odd part of GELU is x/2.
		if math.Abs(y[i]-neg[i]-x) > byHandTol {
			t.Errorf("gelu(%v) − gelu(%v): got %v, want %v", x, -x, y[i]-neg[i], x)
		}
		// The tanh form approximates GELU's x·Φ(x): their largest gap,
		// 4.73e-4 near |x| = 2.7, measured on a grid of step 1e-4 over
		// [−8, 8].
		exact := x * 0.5 * (1 + math.Erf(x/math.Sqrt2))
		if math.Abs(y[i]-exact) > 5e-4 {
			t.Errorf("gelu(%v): got %v, want about x·Φ(x) = %v", x, y[i], exact)
		}
	}
	if y[4] != 0 {
		t.Errorf("gelu(0): got %v, want 0", y[4])
	}
}

func TestSwiGLUByHand(t *testing.T) {
	y := SwiGLU([]float64{0, 1, 40, -800}, []float64{3, 2, 0.5, 7})
	want := []float64{0, 2 / (1 + math.Exp(-1)), 20, 0}
	closeTo(t, "y", y, want, byHandTol, 1e-15)
	dg, du := SwiGLUBackward([]float64{0, -800}, []float64{3, 2}, []float64{1, 1})
	// silu′(0) = σ(0) = ½; far below 0 both gradients vanish, not NaN.
	closeTo(t, "dgate", dg, []float64{1.5, 0}, 0, 0)
	closeTo(t, "dup", du, []float64{0, 0}, 0, 0)
}

func TestActivationBackwardsMatchFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := uniform(rng, 31, -4, 4)
	up := uniform(rng, len(x), -2, 2)
	dy := uniform(rng, len(x), -1, 1)
	closeTo(t, "gelu dx", GELUTanhBackward(x, dy),
		numericGrad(func(v []float64) float64 { return dot(GELUTanh(v), dy) }, x, centralDiffStep), centralDiffRTol, centralDiffATol)
	dgate, dup := SwiGLUBackward(x, up, dy)
	closeTo(t, "swiglu dgate", dgate,
		numericGrad(func(v []float64) float64 { return dot(SwiGLU(v, up), dy) }, x, centralDiffStep), centralDiffRTol, centralDiffATol)
	closeTo(t, "swiglu dup", dup,
		numericGrad(func(v []float64) float64 { return dot(SwiGLU(x, v), dy) }, up, centralDiffStep), centralDiffRTol, centralDiffATol)
}

func TestRoPEByHand(t *testing.T) {
	// Two positions of one head of 4 values, θ = 100: pair 0 turns by s
	// radians, pair 1 by s·100^(−1/2) = s/10.
	p := tensor.RoPEParams{Seq: 2, Heads: 1, HeadDim: 4, Theta: 100}
	x := []float64{1, 2, 3, 4, 1, 2, 3, 4}
	c0, s0, c1, s1 := math.Cos(1), math.Sin(1), math.Cos(0.1), math.Sin(0.1)
	want := []float64{1, 2, 3, 4, 1*c0 - 3*s0, 2*c1 - 4*s1, 3*c0 + 1*s0, 4*c1 + 2*s1}
	closeTo(t, "y", RoPE(x, p), want, byHandTol, byHandTol)
}

func TestRoPEInverseIsTranspose(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	p := tensor.RoPEParams{Seq: 5, Heads: 3, HeadDim: 6, Theta: 10000}
	inv := p
	inv.Inverse = true
	x := uniform(rng, 2*5*3*6, -1, 1)
	r := uniform(rng, len(x), -1, 1)
	closeTo(t, "inverse of forward", RoPE(RoPE(x, p), inv), x, byHandTol, byHandTol)
	// ⟨R x, r⟩ = ⟨x, Rᵀ r⟩: the inverse is the backward.
	if got, want := dot(RoPE(x, p), r), dot(x, RoPE(r, inv)); math.Abs(got-want) > byHandTol*float64(len(x)) {
		t.Errorf("⟨RoPE(x), r⟩ = %v, ⟨x, RoPE⁻¹(r)⟩ = %v: want equal", got, want)
	}
}

// scaled returns a·x.
func scaled(x []float64, a float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = a * v
	}
	return out
}
