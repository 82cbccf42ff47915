package predictor

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// nnlsTol is the agreement asked of two solutions of a well-conditioned
// small problem: a few hundred ulps of the entries' scale, far below any
// difference a wrong active set makes.
const nnlsTol = 1e-9

func TestNNLSKnown(t *testing.T) {
	tests := []struct {
		name       string
		a          []float64
		rows, cols int
		b          []float64
		want       []float64
	}{
		{
			name: "unconstrained optimum is feasible",
			a:    []float64{1, 0, 0, 1, 1, 1}, rows: 3, cols: 2,
			b:    []float64{1, 2, 3},
			want: []float64{1, 2},
		},
		{
			name: "negative unconstrained coefficient clamps to 0",
			// t = 5 − x fitted by a + b·x: b would be −1; with b ≥ 0
			// the best is the mean, a = 4.
			a: []float64{1, 0, 1, 1, 1, 2}, rows: 3, cols: 2,
			b:    []float64{5, 4, 3},
			want: []float64{4, 0},
		},
		{
			name: "every coefficient at the bound",
			a:    []float64{1, 0, 0, 1}, rows: 2, cols: 2,
			b:    []float64{-1, -2},
			want: []float64{0, 0},
		},
		{
			name: "zero column stays at 0",
			a:    []float64{0, 1, 0, 2, 0, 3}, rows: 3, cols: 2,
			b:    []float64{2, 4, 6},
			want: []float64{0, 2},
		},
		{
			name: "a line over widely scaled x",
			a:    []float64{1, 4096, 1, 1 << 20, 1, 16 << 20}, rows: 3, cols: 2,
			b:    []float64{300 + 4096*0.03, 300 + (1<<20)*0.03, 300 + (16<<20)*0.03},
			want: []float64{300, 0.03},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, _, err := nnls(tc.a, tc.rows, tc.cols, tc.b)
			if err != nil {
				t.Fatal(err)
			}
			for j := range x {
				if math.Abs(x[j]-tc.want[j]) > nnlsTol*math.Max(1, math.Abs(tc.want[j])) {
					t.Fatalf("got %v, want %v", x, tc.want)
				}
			}
		})
	}
}

// bruteNNLS solves min ‖A·x − b‖ over x ≥ 0 by trying every set of free
// columns: the optimum is the unconstrained least-squares solution on
// its support, so the best feasible candidate is the answer. It returns
// the optimal residual norm.
func bruteNNLS(a []float64, rows, cols int, b []float64) float64 {
	best := math.Inf(1)
	for mask := 0; mask < 1<<cols; mask++ {
		var idx []int
		for j := range cols {
			if mask&(1<<j) != 0 {
				idx = append(idx, j)
			}
		}
		x := make([]float64, cols)
		if len(idx) > 0 {
			sub := mat.NewDense(rows, len(idx), nil)
			for i := range rows {
				for k, j := range idx {
					sub.Set(i, k, a[i*cols+j])
				}
			}
			var s mat.VecDense
			if err := s.SolveVec(sub, mat.NewVecDense(rows, append([]float64(nil), b...))); err != nil {
				continue
			}
			feasible := true
			for k, j := range idx {
				x[j] = s.AtVec(k)
				feasible = feasible && x[j] >= 0
			}
			if !feasible {
				continue
			}
		}
		best = math.Min(best, residualNorm(a, rows, cols, b, x))
	}
	return best
}

func residualNorm(a []float64, rows, cols int, b, x []float64) float64 {
	var ss float64
	for i := range rows {
		r := b[i]
		for j := range cols {
			r -= a[i*cols+j] * x[j]
		}
		ss += r * r
	}
	return math.Sqrt(ss)
}

func TestNNLSAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		rows := 1 + rng.IntN(8)
		cols := 1 + rng.IntN(5)
		a := make([]float64, rows*cols)
		for i := range a {
			a[i] = rng.NormFloat64()
		}
		b := make([]float64, rows)
		for i := range b {
			b[i] = 3 * rng.NormFloat64()
		}
		x, resid, err := nnls(a, rows, cols, b)
		if err != nil {
			t.Fatalf("trial %d (%d×%d): %v", trial, rows, cols, err)
		}
		for j, v := range x {
			if v < 0 {
				t.Fatalf("trial %d: x[%d] = %g < 0", trial, j, v)
			}
		}
		if got := residualNorm(a, rows, cols, b, x); math.Abs(got-resid) > nnlsTol*math.Max(1, got) {
			t.Fatalf("trial %d: reported residual %g, actual %g", trial, resid, got)
		}
		want := bruteNNLS(a, rows, cols, b)
		if resid > want+nnlsTol*math.Max(1, want) {
			t.Fatalf("trial %d (%d×%d): residual %.12g, brute force %.12g", trial, rows, cols, resid, want)
		}
		// KKT: the gradient Aᵀ(b − A·x) is ≤ 0 where x is 0 and 0 where
		// x is free.
		for j := range cols {
			var g float64
			for i := range rows {
				r := b[i]
				for k := range cols {
					r -= a[i*cols+k] * x[k]
				}
				g += a[i*cols+j] * r
			}
			if x[j] > 0 && math.Abs(g) > 1e-7 || x[j] == 0 && g > 1e-7 {
				t.Fatalf("trial %d: KKT violated at %d: x %g, gradient %g", trial, j, x[j], g)
			}
		}
	}
}

func TestNNLSProportionalColumns(t *testing.T) {
	// Both columns span the same line, so any non-negative split with
	// x₀ + 2·x₁ = 3 solves it exactly; the dependence check keeps the
	// second column out once the first is free.
	x, resid, err := nnls([]float64{1, 2, 2, 4}, 2, 2, []float64{3, 6})
	if err != nil {
		t.Fatal(err)
	}
	if resid > nnlsTol || x[0] < 0 || x[1] < 0 || math.Abs(x[0]+2*x[1]-3) > nnlsTol {
		t.Fatalf("got x %v, residual %g; want x₀ + 2·x₁ = 3, both ≥ 0, residual 0", x, resid)
	}
	if x[0] != 0 && x[1] != 0 {
		t.Fatalf("got x %v, want one column kept at 0", x)
	}
}

func TestNNLSPanicsOnShape(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a 2×2 matrix of 3 entries")
		}
	}()
	nnls([]float64{1, 2, 3}, 2, 2, []float64{1, 2})
}
