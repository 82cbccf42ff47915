package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBlockingFor checks the cache rules on the machines they were
// written for and on smaller caches.
func TestBlockingFor(t *testing.T) {
	for _, c := range []struct {
		name       string
		mr, nr     int
		l1, l2, l3 int64
		want       gemmBlocking
	}{
		// Zen 4 or Sapphire Rapids: the caps.
		{"avx512 48K/1M", 12, 32, 48 << 10, 1 << 20, 16 << 20, gemmBlocking{256, 144, 1024}},
		{"avx2 48K/1M", 6, 16, 48 << 10, 1 << 20, 16 << 20, gemmBlocking{256, 144, 1024}},
		// Skylake-SP: a 32 KiB L1 cannot hold a 256-deep 32-wide sliver.
		{"avx512 32K/1M", 12, 32, 32 << 10, 1 << 20, 1375 << 10, gemmBlocking{160, 144, 1024}},
		// Haswell: 32 KiB L1, 256 KiB L2, 2.5 MiB of L3 a core.
		{"avx2 32K/256K", 6, 16, 32 << 10, 256 << 10, 2560 << 10, gemmBlocking{256, 126, 1024}},
		// A small core: every level cuts.
		{"avx2 16K/128K/512K", 6, 16, 16 << 10, 128 << 10, 512 << 10, gemmBlocking{160, 102, 400}},
	} {
		if got := blockingFor(c.mr, c.nr, c.l1, c.l2, c.l3); got != c.want {
			t.Errorf("%s: blockingFor = %+v, want %+v", c.name, got, c.want)
		}
	}
	t.Logf("this machine: %s kernel %d×%d, blocking %+v", kernel.name, kernel.mr, kernel.nr, kernel.blocking())
}

// TestGemmSmallBlocking runs products through the driver with a blocking
// far smaller than the caps (ragged against every block) and checks them
// against float64 products: the loops must hold for any blocking the
// caches call for.
func TestGemmSmallBlocking(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	kern := kernel
	kern.blk = gemmBlocking{kc: 48, mc: 2 * kern.mr, nc: 3 * kern.nr}
	for _, s := range [][3]int{{5, 7, 3}, {2*kern.mr + 1, 3*kern.nr + 5, 49}, {61, 130, 150}, {kern.mr, kern.nr, 96}} {
		m, n, k := s[0], s[1], s[2]
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			a, b := randSlice(rng, m*k), randSlice(rng, k*n)
			lda, ldb := k, n
			if tr[0] {
				lda = m
			}
			if tr[1] {
				ldb = k
			}
			c := randSlice(rng, m*n)
			want := make([]float64, m*n)
			for i := range m {
				for j := range n {
					var sum float64
					for p := range k {
						ai, bi := i*lda+p, p*ldb+j
						if tr[0] {
							ai = p*lda + i
						}
						if tr[1] {
							bi = j*ldb + p
						}
						av, bv := a[ai], b[bi]
						sum += float64(av) * float64(bv)
					}
					want[i*n+j] = 0.5*sum + 2*float64(c[i*n+j])
				}
			}
			pack := make([]float32, gemmPackElems(m, n, k))
			gemmRegionWith(kern, pack, tr[0], tr[1], m, n, k, 0.5, a, lda, b, ldb, 2, c, n)
			for i, w := range want {
				if d := math.Abs(float64(c[i]) - w); d > 1e-4*(1+math.Abs(w)) {
					t.Fatalf("%v trans %v: c[%d] = %g, want %g", s, tr, i, c[i], w)
				}
			}
		}
	}
}

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = rng.Float32()*2 - 1
	}
	return s
}
