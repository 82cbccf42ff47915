package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// TestGemmBlockedViews checks products whose op(B) and C are blocked
// views (samples side by side, each where it lies) against the same
// products on gathered plain copies: bit for bit, on every kernel and on
// devices of 1 to 3 threads, for blocks of one and several slivers, β of
// 0, 1 and ½ (which scales C block by block), and k = 0 (which only
// scales or clears C).
func TestGemmBlockedViews(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	for _, kern := range gemmKernels() {
		for _, tc := range []struct{ m, k, slivers, samples int }{{13, 9, 1, 3}, {30, 300, 2, 4}, {7, 0, 1, 2}, {150, 40, 3, 5}} {
			for _, beta := range []float32{0, 1, 0.5} {
				name := fmt.Sprintf("%s/m=%d k=%d pix=%d×%d/beta=%g", kern.name, tc.m, tc.k, tc.slivers, kern.nr, beta)
				pix := tc.slivers * kern.nr
				n := tc.samples * pix
				// B: samples of [k, pix], a gap after each; C likewise.
				bStep, cStep := max(tc.k, 1)*pix+5, tc.m*pix+3
				a := vals(tc.m * max(tc.k, 1))
				bData, cData := vals(tc.samples*bStep), vals(tc.samples*cStep)
				// The plain copies: B [k, n], C [m, n].
				bPlain, cPlain := make([]float32, tc.k*n), make([]float32, tc.m*n)
				for s := range tc.samples {
					for r := range tc.k {
						copy(bPlain[r*n+s*pix:r*n+(s+1)*pix], bData[s*bStep+r*pix:])
					}
					for r := range tc.m {
						copy(cPlain[r*n+s*pix:r*n+(s+1)*pix], cData[s*cStep+r*pix:])
					}
				}
				pack := make([]float32, gemmPackElems(tc.m, n, tc.k))
				gemmRegionWith(kern, pack, false, false, tc.m, n, tc.k, 1.25, a, max(tc.k, 1), bPlain, n, beta, cPlain, n)
				gemmRegionViews(kern, pack, false, false, tc.m, n, tc.k, 1.25, a, max(tc.k, 1),
					blockedMatrix(bData, pix, bStep), beta, blockedMatrix(cData, pix, cStep))
				for s := range tc.samples {
					for r := range tc.m {
						for j := range pix {
							got, want := cData[s*cStep+r*pix+j], cPlain[r*n+s*pix+j]
							if math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("%s: C[%d][%d] of sample %d = %v, plain %v", name, r, j, s, got, want)
							}
						}
					}
				}
			}
		}
	}
	// The parallel driver cuts C into regions of whole slivers.
	for threads := 1; threads <= 3; threads++ {
		d := New(tensor.Options{Threads: threads})
		m, k, pix, samples := 96, 64, 2*kernel.nr, 6
		n := samples * pix
		a, bData := vals(m*k), vals(samples*k*pix)
		cData := make([]float32, samples*m*pix)
		bPlain, cPlain := make([]float32, k*n), make([]float32, m*n)
		for s := range samples {
			for r := range k {
				copy(bPlain[r*n+s*pix:r*n+(s+1)*pix], bData[s*k*pix+r*pix:])
			}
		}
		d.sgemm(false, false, m, n, k, 1, a, k, bPlain, n, 0, cPlain, n)
		d.sgemmViews(false, false, m, n, k, 1, a, k, blockedMatrix(bData, pix, k*pix), 0, blockedMatrix(cData, pix, m*pix))
		for s := range samples {
			for r := range m {
				for j := range pix {
					if got, want := cData[s*m*pix+r*pix+j], cPlain[r*n+s*pix+j]; math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("threads %d: C[%d][%d] of sample %d = %v, plain %v", threads, r, j, s, got, want)
					}
				}
			}
		}
		d.Close()
	}
}
