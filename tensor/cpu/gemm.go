package cpu

import (
	"github.com/pipecast/pipecast/tensor"
)

// Every matrix product of the backend (Gemm, linear, convolution) goes
// through sgemm or sgemmSerial below. They follow the layered scheme of
// Goto and van de Geijn ("Anatomy of High-Performance Matrix
// Multiplication", 2008) as BLIS writes it: C is updated a KC-deep slice
// of the inner dimension at a time; each slice of op(B), NC columns
// wide, is packed into slivers of NR columns laid out step by step, each
// MC-row block of op(A) into slivers of MR rows (alpha folded in),
// and a register-blocked micro-kernel (gemm_amd64.s, or gemmKernelGo)
// multiplies one MR-row sliver by one NR-column sliver into an MR×NR
// block of C. Packing makes every load of the micro-kernel contiguous,
// whatever the transposes, and keeps an NR sliver of B in L1 while the A
// slivers stream from L2.
//
// sgemm cuts C into one region per thread (along the dimension that
// packs less) and runs the scheme on each region with its own packing
// buffers: one hand-off to the pool per product, no synchronisation
// inside it.
//
// KC, MC and NC follow the CPU's caches (gemm_blocking.go), up to the caps
// below, which size the packing buffers.
const (
	gemmKC = 256
	gemmMC = 144  // a multiple of every kernel's MR
	gemmNC = 1024 // a multiple of every kernel's NR
	// gemmMRMax and gemmNRMax bound every kernel's block; the packing
	// buffers are sized with them so that their size does not depend on
	// the CPU the process runs on.
	gemmMRMax = 12
	gemmNRMax = 32
	// gemmMinParallelMACs is the fewest multiply-adds worth handing to
	// another thread: about 20 µs of work, several times the cost of
	// waking a worker.
	gemmMinParallelMACs = 1 << 16
)

// GemmShape is one matrix product's sizes: op(A) is M×K, op(B) K×N;
// Count is how many times a kernel runs it.
type GemmShape struct {
	M, N, K        int
	TransA, TransB bool
	Count          int
}

// Gemm sets c = alpha·op(a)·op(b) + beta·c for 2-D tensors. c must not
// share memory with a or b. With beta 0, c's previous contents are
// ignored (a NaN there does not propagate), as in BLAS.
func (d *Device) Gemm(transA, transB bool, alpha float32, a, b *tensor.Tensor, beta float32, c *tensor.Tensor) {
	m, n, k := tensor.GemmDims(transA, transB, a, b, c)
	da := d.data("gemm", a, a.Len())
	db := d.data("gemm", b, b.Len())
	dc := d.data("gemm", c, c.Len())
	d.sgemm(transA, transB, m, n, k, alpha, da, a.Dim(1), db, b.Dim(1), beta, dc, n)
}

// GemmWorkspaceElems returns the float32 elements of scratch (Workspace)
// memory the CPU backend holds while it computes one m×n×k product on a
// device of threads threads: a set of packing buffers per region of C
// (see gemmRegions). A device without storage (the meta backend) uses it
// to account the scratch a CPU run holds.
func GemmWorkspaceElems(m, n, k, threads int) int {
	if m == 0 || n == 0 {
		return 0
	}
	rt, ct := gemmRegions(m, n, k, threads)
	return rt * ct * gemmPackElems(m, n, k)
}

// gemmPackElems is the size of one set of packing buffers for products of
// at most m×n×k: a gemmMC×gemmKC block of A, a gemmKC×gemmNC panel of B
// (each cut to the product and rounded up to whole slivers) and one
// MR×NR block for the edges of C.
func gemmPackElems(m, n, k int) int {
	if k == 0 {
		return 0
	}
	kc := min(k, gemmKC)
	return kc*(roundUp(min(m, gemmMC), gemmMRMax)+roundUp(min(n, gemmNC), gemmNRMax)) + gemmMRMax*gemmNRMax
}

func roundUp(x, to int) int { return (x + to - 1) / to * to }

// gemmRegions returns how many regions, along rows and along columns, a
// product is cut into for threads threads: one for products too small to
// share, else threads regions in the grid whose packing (each region
// packs its rows of A and its columns of B) moves the least.
func gemmRegions(m, n, k, threads int) (rt, ct int) {
	if threads <= 1 || m*n*k < gemmMinParallelMACs*2 {
		return 1, 1
	}
	best := -1
	for r := 1; r <= threads; r++ {
		if threads%r != 0 {
			continue
		}
		c := threads / r
		if (r > 1 && (m+r-1)/r < gemmMRMax/2) || (c > 1 && (n+c-1)/c < gemmNRMax/2) {
			continue // regions thinner than half a block waste the kernel
		}
		cost := (m+r-1)/r*k + k*((n+c-1)/c)
		if best < 0 || cost < best {
			best, rt, ct = cost, r, c
		}
	}
	if best < 0 {
		return 1, 1
	}
	return rt, ct
}

// gemmSpan returns region i of count along a dimension of size. Each
// region starts at the multiple of align nearest its even share (i·size /
// count), so that only the last region has a ragged edge and no region is
// more than align/2 longer than an even split: 400 columns in slivers of
// 32 split 192 + 208, where rounding every share up to whole slivers
// split them 224 + 176, leaving one thread idle an eighth of the product.
func gemmSpan(size, count, align, i int) (lo, hi int) {
	start := func(i int) int {
		if i >= count {
			return size
		}
		return min(size, (2*i*size+count*align)/(2*count*align)*align)
	}
	return start(i), start(i + 1)
}

// sgemm sets c = alpha·op(a)·op(b) + beta·c on row-major matrices with
// leading dimensions lda, ldb, ldc, using the device's threads. op(a) is
// m×k, op(b) k×n. It must not be called from inside d.pool.parallel: use
// sgemmSerial there.
func (d *Device) sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if d.extGemm != nil {
		d.extGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	d.sgemmViews(transA, transB, m, n, k, alpha, a, lda, plainMatrix(b, ldb), beta, plainMatrix(c, ldc))
}

// sgemmViews is sgemm with op(b) and c given as views (see colMatrix),
// on the device's own kernels.
func (d *Device) sgemmViews(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b colMatrix, beta float32, c colMatrix) {
	if m == 0 || n == 0 {
		return
	}
	rt, ct := gemmRegions(m, n, k, d.pool.threads)
	per := gemmPackElems(m, n, k)
	pack, release := d.scratch(rt * ct * per)
	defer release()
	if rt*ct == 1 {
		gemmRegionViews(kernel, pack, transA, transB, m, n, k, alpha, a, lda, b, beta, c)
		return
	}
	d.pool.parallel(rt*ct, 1, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			i0, i1 := gemmSpan(m, rt, kernel.mr, r/ct)
			j0, j1 := gemmSpan(n, ct, kernel.nr, r%ct)
			if i0 == i1 || j0 == j1 {
				continue
			}
			ao := i0 * lda
			if transA {
				ao = i0
			}
			gemmRegionViews(kernel, pack[r*per:(r+1)*per], transA, transB, i1-i0, j1-j0, k, alpha, a[ao:], lda,
				b.cols(j0, transB), beta, c.sub(i0, j0))
		}
	})
}

// sgemmSerial is sgemm on the calling goroutine alone, for kernels that
// already spread independent products over the pool. pack must hold
// gemmPackElems(m, n, k) elements.
func (d *Device) sgemmSerial(pack []float32, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if d.extGemm != nil {
		d.extGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	gemmRegion(pack, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gemmRegion computes c = alpha·op(a)·op(b) + beta·c on the calling
// goroutine, with pack (gemmPackElems(m, n, k) elements) as its buffers.
func gemmRegion(pack []float32, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemmRegionWith(kernel, pack, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gemmRegionWith is gemmRegion with the micro-kernel kern.
func gemmRegionWith(kern gemmKernel, pack []float32, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemmRegionViews(kern, pack, transA, transB, m, n, k, alpha, a, lda, plainMatrix(b, ldb), beta, plainMatrix(c, ldc))
}

// gemmRegionViews is gemmRegionWith with op(b) and c given as views. A
// blocked view's block width must be a multiple of kern.nr, and its
// first column one too, so that no sliver of B and no tile of C crosses
// a block.
func gemmRegionViews(kern gemmKernel, pack []float32, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b colMatrix, beta float32, c colMatrix) {
	if beta != 0 && beta != 1 {
		for i := 0; i < m; i++ {
			c.eachRun(i, n, func(row []float32) {
				for j := range row {
					row[j] *= beta
				}
			})
		}
		beta = 1
	}
	if k == 0 || alpha == 0 {
		if beta == 0 {
			for i := 0; i < m; i++ {
				c.eachRun(i, n, func(row []float32) { clear(row) })
			}
		}
		return
	}
	kern = kern.forCols(n)
	mr, nr, fn := kern.mr, kern.nr, kern.fn
	pA, pB := packA, packB
	if kern.packA != nil {
		pA = kern.packA
	}
	if kern.packB != nil {
		pB = kern.packB
	}
	kcMax := min(k, gemmKC)
	aLen := kcMax * roundUp(min(m, gemmMC), gemmMRMax)
	bLen := kcMax * roundUp(min(n, gemmNC), gemmNRMax)
	ap, bp, edge := pack[:aLen], pack[aLen:aLen+bLen], pack[aLen+bLen:aLen+bLen+mr*nr]
	blk := kern.blocking()
	for jc := 0; jc < n; jc += blk.nc {
		nc := min(blk.nc, n-jc)
		for pc := 0; pc < k; pc += blk.kc {
			kc := min(blk.kc, k-pc)
			b.pack(pB, bp, transB, pc, jc, kc, nc, nr)
			acc := pc > 0 || beta == 1
			if transA && alpha == 1 && kern.strided != nil && nc <= nr {
				// One sliver of B: packed A would serve it alone.
				gemmUnpackedA(kern, pA, ap, edge, m, kc, a[pc*lda:], lda, bp, c.sub(0, jc), nc, acc)
				continue
			}
			for ic := 0; ic < m; ic += blk.mc {
				mc := min(blk.mc, m-ic)
				pA(ap, transA, a, lda, ic, pc, mc, kc, mr, alpha)
				for jr := 0; jr < nc; jr += nr {
					nb := min(nr, nc-jr)
					bs := bp[jr*kc:]
					for ir := 0; ir < mc; ir += mr {
						mb := min(mr, mc-ir)
						cs, ldc := c.at(ic+ir, jc+jr)
						if mb == mr && nb == nr {
							// Whole tiles, nearly all of them, call the
							// kernel straight.
							fn(kc, ap[ir*kc:], bs, cs, ldc, acc)
							continue
						}
						gemmTile(&kern, kc, ap[ir*kc:], bs, cs, ldc, mb, nb, edge, acc)
					}
				}
			}
		}
	}
}

// gemmUnpackedA adds (acc) or sets op(A)·B into the m×nb block of C at c
// (nb ≤ kern.nr), op(A) = aᵀ with a's step p at a[p·lda:] and B one packed
// sliver of kc steps: full slivers of A straight from a through
// kern.strided, the ragged last one packed into ap by pA first. edge
// takes tiles narrower than the kernel.
func gemmUnpackedA(kern gemmKernel, pA func(dst []float32, transA bool, a []float32, lda, ic, pc, mc, kc, mr int, alpha float32),
	ap, edge []float32, m, kc int, a []float32, lda int, bs []float32, c colMatrix, nb int, acc bool) {
	mr, nr := kern.mr, kern.nr
	for ir := 0; ir < m; ir += mr {
		mb := min(mr, m-ir)
		cs, ldc := c.at(ir, 0)
		if mb < mr {
			pA(ap, true, a, lda, ir, 0, mb, kc, mr, 1)
			gemmTile(&kern, kc, ap, bs, cs, ldc, mb, nb, edge, acc)
			continue
		}
		if nb == nr {
			kern.strided(kc, a[ir:], lda, bs, cs, ldc, acc)
			continue
		}
		kern.strided(kc, a[ir:], lda, bs, edge, nr, false)
		addEdge(cs, ldc, edge, nr, mb, nb, acc)
	}
}

// gemmTile adds (acc) or sets the product of a packed sliver of A (mb ≤
// mr rows used) and one of B (nb ≤ nr columns used) into the block of C
// at c: in place where the block is whole, through edge, an mr×nr tile,
// where it is ragged; a ragged sliver of A runs the narrowest kernel that
// covers it (kern.partial).
func gemmTile(kern *gemmKernel, kc int, as, bs, c []float32, ldc, mb, nb int, edge []float32, acc bool) {
	rows, fn := kern.mr, kern.fn
	if mb < kern.mr && kern.partial != nil {
		rows, fn = kern.partial(mb)
	}
	if mb == rows && nb == kern.nr {
		fn(kc, as, bs, c, ldc, acc)
		return
	}
	fn(kc, as, bs, edge, kern.nr, false)
	addEdge(c, ldc, edge, kern.nr, mb, nb, acc)
}

// addEdge adds (acc) or copies the mb×nb tile at edge (rows nr apart)
// into c (rows ldc apart).
func addEdge(c []float32, ldc int, edge []float32, nr, mb, nb int, acc bool) {
	for i := 0; i < mb; i++ {
		dst := c[i*ldc : i*ldc+nb]
		src := edge[i*nr : i*nr+nb]
		if acc {
			for j, v := range src {
				dst[j] += v
			}
		} else {
			copy(dst, src)
		}
	}
}
