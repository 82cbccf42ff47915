package cpu

// A convolution runs its samples in groups (see convPlan): each group's
// buffers (convSlot), the loops and products it runs on the pool or on
// one thread (convExec), and the copies that gather a group's samples
// into one matrix and scatter the product back where a product cannot
// read and write them in place.

// convSlot is the buffers one thread (or the whole pool) lowers its
// groups in; first marks a thread's first group.
type convSlot struct {
	index      int
	first      bool
	cols, outs []float32
}

// convGroups runs pl with buf (pl.elems() elements) as its scratch: it
// calls fn(e, s, i0, n) for every group of samples [i0, i0+n), fn using
// the buffers of s and running its loops and products through e, in the
// order of pl.runs(). In per-thread mode thread t takes samples [t·per,
// (t+1)·per) in slot t; the rest run in slot 0 on the whole pool.
func (d *Device) convGroups(pl *convPlan, buf []float32, fn func(e convExec, s convSlot, i0, n int)) {
	slotLen := pl.cols + pl.outs + pl.pack
	slot := func(t int) (convSlot, []float32) {
		b := buf[t*slotLen : (t+1)*slotLen]
		return convSlot{index: t, cols: b[:pl.cols], outs: b[pl.cols : pl.cols+pl.outs]}, b[pl.cols+pl.outs:]
	}
	start := 0
	if pl.perThread {
		per := pl.g.n / pl.threads
		d.pool.parallel(pl.threads, 1, func(lo, hi int) {
			for t := lo; t < hi; t++ {
				s, pack := slot(t)
				e := convExec{serial: d, pack: pack}
				for i := t * per; i < (t+1)*per; i += pl.group {
					s.first = i == t*per
					fn(e, s, i, min(pl.group, (t+1)*per-i))
				}
			}
		})
		start = pl.threads * per
	}
	s, _ := slot(0)
	for i := start; i < pl.g.n; i += pl.group {
		fn(convExec{d: d}, s, i, min(pl.group, pl.g.n-i))
	}
}

// convExec runs one group's loops and products: on the device's whole
// pool when d is set, else on the calling thread (which is then one of the
// pool's, so it must not use the pool again) with pack as the products'
// packing buffers.
type convExec struct {
	d, serial *Device
	pack      []float32
}

// convGemmHook, when set (by tests), sees the shape of every product a
// convolution runs.
var convGemmHook func(GemmShape)

func (e convExec) gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if convGemmHook != nil {
		convGemmHook(GemmShape{M: m, N: n, K: k, TransA: transA, TransB: transB, Count: 1})
	}
	if e.d != nil {
		e.d.sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	e.serial.sgemmSerial(e.pack, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// convInPlace, when false (by tests), makes every convolution gather and
// scatter its groups' samples rather than multiply them in place.
var convInPlace = true

// inPlace reports whether a group of samples of pix pixels each can be
// multiplied in place: blocks of pix columns must be whole slivers of the
// micro-kernel, and the product must run on the device's own kernels
// (an external GEMM takes plain matrices only).
func (e convExec) inPlace(pix int) bool {
	dev := e.d
	if dev == nil {
		dev = e.serial
	}
	return convInPlace && dev.extGemm == nil && pix%kernel.nr == 0
}

// gemmViews is gemm with op(b) and c as views; b is never transposed.
func (e convExec) gemmViews(transA bool, m, n, k int, alpha float32, a []float32, lda int, b colMatrix, beta float32, c colMatrix) {
	if convGemmHook != nil {
		convGemmHook(GemmShape{M: m, N: n, K: k, TransA: transA, Count: 1})
	}
	if e.d != nil {
		e.d.sgemmViews(transA, false, m, n, k, alpha, a, lda, b, beta, c)
		return
	}
	if m == 0 || n == 0 {
		return
	}
	gemmRegionViews(kernel, e.pack, transA, false, m, n, k, alpha, a, lda, b, beta, c)
}

func (e convExec) loop(n, grain int, fn func(lo, hi int)) {
	if e.d != nil {
		e.d.pool.parallel(n, grain, fn)
		return
	}
	fn(0, n)
}

// gatherCols copies items [lo, hi) of n samples' matrices src [n, rows,
// pix] into dst [rows, n·pix], sample s into columns [s·pix, (s+1)·pix):
// item s·rows + r is row r of sample s.
func gatherCols(src, dst []float32, pix, rows, n, lo, hi int) {
	ld := n * pix
	for it := lo; it < hi; it++ {
		s, r := it/rows, it%rows
		copy(dst[r*ld+s*pix:r*ld+(s+1)*pix], src[it*pix:(it+1)*pix])
	}
}

// scatterCols is gatherCols' inverse, adding bias[r] to row r unless bias
// is nil: items [lo, hi) of src [rows, n·pix] go to dst [n, rows, pix].
func scatterCols(src, dst, bias []float32, pix, rows, n, lo, hi int) {
	ld := n * pix
	for it := lo; it < hi; it++ {
		s, r := it/rows, it%rows
		in, out := src[r*ld+s*pix:r*ld+(s+1)*pix], dst[it*pix:(it+1)*pix]
		if bias == nil {
			copy(out, in)
			continue
		}
		b := bias[r]
		for j, v := range in {
			out[j] = v + b
		}
	}
}
