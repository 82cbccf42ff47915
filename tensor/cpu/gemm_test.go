package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// gemmCase is one product checked against a float64 reference: sizes
// chosen around the kernels' blocks (MR 4, 6, 12; NR 16, 32) and the
// packing blocks (gemmMC, gemmKC, gemmNC), with leading dimensions wider
// than the matrices so that a kernel reading or writing past a row shows.
type gemmCase struct{ m, n, k int }

var gemmCases = []gemmCase{
	{1, 1, 1}, {1, 33, 7}, {13, 1, 5}, {12, 32, 1}, {6, 16, 3}, {4, 16, 2},
	{11, 31, 17}, {25, 65, 40}, {gemmMC + 5, 47, 9}, {7, gemmNC + 3, 5},
	{14, 35, gemmKC + 3}, {37, 70, 2*gemmKC + 1}, {3, 2, 600},
	{8, 32, 5}, {16, 64, 9}, {20, 96, 3}, {gemmMC + 8, 33, 4},
	// every ragged height of a 6-row sliver (M mod 6 = 1 … 5) over many
	// steps, with N ragged and whole: the partial kernels and the edge.
	{13, 16, 10}, {2, 16, 9}, {8, 48, 11}, {9, 19, 8}, {10, 37, 12},
	{64, 50, 27}, {17, 32, 8}, {23, 45, 16},
}

func TestGemmKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, kern := range gemmKernels() {
		for _, tc := range gemmCases {
			for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				for _, ab := range [][2]float32{{1, 0}, {1, 1}, {-0.5, 0.25}, {0, 2}} {
					name := fmt.Sprintf("%s/%dx%dx%d/tA=%v,tB=%v/alpha=%g,beta=%g", kern.name, tc.m, tc.n, tc.k, tr[0], tr[1], ab[0], ab[1])
					checkGemm(t, name, rng, tc, tr[0], tr[1], ab[0], ab[1], func(pack []float32, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
						gemmRegionWith(kern, pack, tr[0], tr[1], m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
					})
				}
			}
		}
	}
}

// TestGemmRegions checks the parallel driver, which cuts C into regions,
// on devices of 1 to 4 threads, and that it holds exactly
// GemmWorkspaceElems of scratch.
func TestGemmRegions(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for threads := 1; threads <= 4; threads++ {
		d := New(tensor.Options{Threads: threads})
		for _, tc := range append(gemmCases, gemmCase{100, 300, 70}, gemmCase{300, 20, 90}, gemmCase{64, 64, 64}) {
			for _, tr := range [][2]bool{{false, false}, {true, true}} {
				name := fmt.Sprintf("threads=%d/%dx%dx%d/tA=%v,tB=%v", threads, tc.m, tc.n, tc.k, tr[0], tr[1])
				d.ResetPeak()
				checkGemm(t, name, rng, tc, tr[0], tr[1], 1.5, 0.5, func(_ []float32, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
					d.sgemm(tr[0], tr[1], m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
				})
				got := d.Memory().PeakBytes[tensor.Workspace]
				if want := int64(GemmWorkspaceElems(tc.m, tc.n, tc.k, threads)) * tensor.BytesPerElement; got != want {
					t.Errorf("%s: workspace peak %d bytes, GemmWorkspaceElems says %d", name, got, want)
				}
				if live := d.Memory().LiveBytes[tensor.Workspace]; live != 0 {
					t.Errorf("%s: %d workspace bytes still held", name, live)
				}
			}
		}
		d.Close()
	}
}

type gemmFunc func(pack []float32, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

// checkGemm runs f on random operands stored with padded leading
// dimensions and compares every element of C, and the padding around it,
// with a float64 product.
func checkGemm(t *testing.T, name string, rng *rand.Rand, tc gemmCase, transA, transB bool, alpha, beta float32, f gemmFunc) {
	t.Helper()
	m, n, k := tc.m, tc.n, tc.k
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	lda, ldb, ldc := ac+3, bc+5, n+7
	const guard = float32(-12345)
	fill := func(rows, ld, cols int) []float32 {
		s := make([]float32, rows*ld+1)
		for i := range s {
			s[i] = guard
		}
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				s[i*ld+j] = float32(rng.Float64()*2 - 1)
			}
		}
		return s
	}
	a, b, c := fill(ar, lda, ac), fill(br, ldb, bc), fill(m, ldc, n)
	if beta == 0 {
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				c[i*ldc+j] = float32(math.NaN()) // beta 0 must ignore C
			}
		}
	}
	want := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				ai, bi := i*lda+p, p*ldb+j
				if transA {
					ai = p*lda + i
				}
				if transB {
					bi = j*ldb + p
				}
				av, bv := a[ai], b[bi]
				s += float64(av) * float64(bv)
			}
			w := float64(alpha) * s
			if beta != 0 {
				w += float64(beta) * float64(c[i*ldc+j])
			}
			want[i*n+j] = w
		}
	}
	f(make([]float32, gemmPackElems(m, n, k)), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	tol := 1e-5 * float64(k+1)
	for i := 0; i < m; i++ {
		for j := 0; j < ldc && i*ldc+j < len(c); j++ {
			got := c[i*ldc+j]
			if j >= n {
				if got != guard {
					t.Fatalf("%s: wrote %g past row %d's end (column %d)", name, got, i, j)
				}
				continue
			}
			if w := want[i*n+j]; math.Abs(float64(got)-w) > tol*(1+math.Abs(w)) || math.IsNaN(float64(got)) {
				t.Fatalf("%s: c[%d][%d] = %g, want %g", name, i, j, got, w)
			}
		}
	}
	if c[len(c)-1] != guard {
		t.Fatalf("%s: wrote past C's last row", name)
	}
}

// TestGemmSpan checks that a product's regions tile each dimension in
// order, start on multiples of the alignment, and stay within half an
// alignment of an even split.
func TestGemmSpan(t *testing.T) {
	for _, align := range []int{1, 6, 12, 16, 32} {
		for _, count := range []int{1, 2, 3, 4, 8} {
			for size := 1; size <= 700; size++ {
				next := 0
				for i := range count {
					lo, hi := gemmSpan(size, count, align, i)
					if lo != next || hi < lo || (i == count-1 && hi != size) {
						t.Fatalf("gemmSpan(%d, %d, %d, %d) = [%d, %d), want it to start at %d (and the last to end at %d)", size, count, align, i, lo, hi, next, size)
					}
					if lo%align != 0 && lo != size {
						t.Fatalf("gemmSpan(%d, %d, %d, %d) starts at %d, not a multiple of %d", size, count, align, i, lo, align)
					}
					if even := float64(size) / float64(count); float64(hi-lo) > even+float64(align) {
						t.Fatalf("gemmSpan(%d, %d, %d, %d) = [%d, %d): %d long, an even share is %.1f", size, count, align, i, lo, hi, hi-lo, even)
					}
					next = hi
				}
			}
		}
	}
	if lo, hi := gemmSpan(400, 2, 32, 0); lo != 0 || hi != 192 {
		t.Errorf("gemmSpan(400, 2, 32, 0) = [%d, %d), want [0, 192)", lo, hi)
	}
}

// TestGemmRegionsNarrow checks that a product of few columns but many
// rows (a deep layer's micro-batch) is shared out by rows, and one too
// thin both ways is not shared.
func TestGemmRegionsNarrow(t *testing.T) {
	if rt, ct := gemmRegions(384, 4, 1152, 2); rt != 2 || ct != 1 {
		t.Errorf("gemmRegions(384, 4, 1152, 2) = %d×%d, want 2×1", rt, ct)
	}
	if rt, ct := gemmRegions(4, 384, 1152, 2); rt != 1 || ct != 2 {
		t.Errorf("gemmRegions(4, 384, 1152, 2) = %d×%d, want 1×2", rt, ct)
	}
	if rt, ct := gemmRegions(8, 8, 1<<14, 2); rt != 1 || ct != 1 {
		t.Errorf("gemmRegions(8, 8, 16384, 2) = %d×%d, want 1×1", rt, ct)
	}
}
