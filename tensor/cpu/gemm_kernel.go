package cpu

// gemmKernel is a micro-kernel: fn sets (acc false) or adds to (acc true)
// the mr×nr block of C at c, rows ldc elements apart, the product of kc
// steps of a packed A sliver (mr values per step) and of a packed B
// sliver (nr values per step).
type gemmKernel struct {
	name   string
	mr, nr int
	fn     func(kc int, a, b, c []float32, ldc int, acc bool)
	// partial, when set, returns for a ragged sliver of mb < mr rows a
	// kernel over its first rows ≥ mb rows only (same packed layout).
	partial func(mb int) (rows int, fn func(kc int, a, b, c []float32, ldc int, acc bool))
	// packA and packB, when set, replace the portable packing loops
	// (same arguments and layout as packA and packB).
	packA func(dst []float32, transA bool, a []float32, lda, ic, pc, mc, kc, mr int, alpha float32)
	packB func(dst []float32, transB bool, b []float32, ldb, pc, jc, kc, nc, nr int)
	// strided, when set, is fn on an A sliver that lies unpacked, its
	// steps lda values apart (a transposed A): full slivers only.
	strided func(kc int, a []float32, lda int, b, c []float32, ldc int, acc bool)
	// narrow, when set, is the kernel for products of at most narrow.nr
	// columns, which would leave most of this kernel's slivers empty.
	narrow *gemmKernel
	// blk is the blocking the driver cuts products into for this kernel;
	// zero: the caps (gemmKC, gemmMC, gemmNC).
	blk gemmBlocking
}

// forCols returns the kernel for a product of n columns: k's narrow
// kernel where n fits it, else k.
func (k gemmKernel) forCols(n int) gemmKernel {
	if k.narrow != nil && n <= k.narrow.nr {
		return *k.narrow
	}
	return k
}

// blocking returns k's blocking: blk, or the caps where blk is unset.
func (k gemmKernel) blocking() gemmBlocking {
	if k.blk.kc == 0 {
		return gemmBlocking{kc: gemmKC, mc: gemmMC / k.mr * k.mr, nc: gemmNC / k.nr * k.nr}
	}
	return k.blk
}

// withCacheBlocking returns k with the blocking this machine's caches
// call for (cacheBlocking).
func withCacheBlocking(k gemmKernel) gemmKernel {
	k.blk = cacheBlocking(k.mr, k.nr)
	if k.narrow != nil {
		n := withCacheBlocking(*k.narrow)
		k.narrow = &n
	}
	return k
}

// kernel is the micro-kernel of this process, chosen once from the CPU's
// features (gemm_amd64.go) or the portable one, blocked for its caches.
var kernel = withCacheBlocking(selectKernel())

// GemmKernel names the micro-kernel the backend's products use on this
// machine: "avx512", "avx2" or "go".
func GemmKernel() string { return kernel.name }

// GemmBlocking returns the micro-kernel's block (mr×nr) and the blocking
// the backend's products use on this machine (gemm_blocking.go).
func GemmBlocking() (mr, nr, kc, mc, nc int) {
	b := kernel.blocking()
	return kernel.mr, kernel.nr, b.kc, b.mc, b.nc
}

// gemmKernelGo is the portable micro-kernel, 4×16, for builds without
// assembly (the noasm tag, other architectures) and CPUs without AVX2 and
// FMA.
var gemmKernelGo = gemmKernel{name: "go", mr: 4, nr: 16, fn: kernelGo}

func kernelGo(kc int, a, b, c []float32, ldc int, acc bool) {
	const mr, nr = 4, 16
	var sum [mr][nr]float32
	a, b = a[:kc*mr], b[:kc*nr]
	for p := 0; p < kc; p++ {
		bv := (*[nr]float32)(b[p*nr:])
		av := (*[mr]float32)(a[p*mr:])
		for r := 0; r < mr; r++ {
			x := av[r]
			row := &sum[r]
			for j := 0; j < nr; j++ {
				row[j] += x * bv[j]
			}
		}
	}
	for r := 0; r < mr; r++ {
		out := c[r*ldc : r*ldc+nr]
		if acc {
			for j, v := range sum[r] {
				out[j] += v
			}
		} else {
			copy(out, sum[r][:])
		}
	}
}
