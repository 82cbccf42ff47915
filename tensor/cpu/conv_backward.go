package cpu

import (
	"github.com/pipecast/pipecast/tensor"
)

// Conv2DBackwardData sets dx, the gradient of conv2d with respect to x,
// from dy: per group of samples, dcol [K, g·P] = wᵀ·dy_g, which col2im adds
// back onto the input positions each column entry came from.
func (d *Device) Conv2DBackwardData(dy, w, dx *tensor.Tensor, p tensor.Conv2DParams) {
	const op = "conv2d backward data"
	g := convCheck(op, dx, w, dy, p)
	dyd := d.data(op, dy, dy.Len())
	wd := d.data(op, w, w.Len())
	dxd := d.data(op, dx, dx.Len())
	pl := newConvPlan(ConvBackwardData, g, d.pool.threads, d.ownThreads())
	buf, release := d.scratch(pl.elems())
	defer release()
	k, pix, in := g.cols(), g.pixels(), g.c*g.h*g.w
	d.convGroups(&pl, buf, func(e convExec, s convSlot, i0, n int) {
		cols := n * pix
		dys := dyd[i0*g.o*pix : (i0+n)*g.o*pix]
		dxs := dxd[i0*in : (i0+n)*in]
		// In place (see Conv2DForward), the product reads the group's
		// output gradients, and for a direct convolution writes its
		// input gradients, where they lie.
		inPlace := n > 1 && e.inPlace(pix)
		b := plainMatrix(dys, pix)
		switch {
		case inPlace:
			b = blockedMatrix(dys, pix, g.o*pix)
		case n > 1:
			src := s.outs[:g.o*cols]
			e.loop(n*g.o, max(1, elementGrain/pix), func(lo, hi int) { gatherCols(dys, src, pix, g.o, n, lo, hi) })
			b = plainMatrix(src, cols)
		}
		if g.direct() && (n == 1 || inPlace) {
			c := plainMatrix(dxs, pix)
			if inPlace {
				c = blockedMatrix(dxs, pix, in)
			}
			e.gemmViews(true, g.c, cols, g.o, 1, wd, k, b, 0, c)
			return
		}
		dcol := s.cols[:k*cols]
		e.gemmViews(true, k, cols, g.o, 1, wd, k, b, 0, plainMatrix(dcol, cols))
		if g.direct() {
			e.loop(n*g.c, max(1, elementGrain/pix), func(lo, hi int) { scatterCols(dcol, dxs, nil, pix, g.c, n, lo, hi) })
			return
		}
		e.loop(n*g.c, max(1, elementGrain/(g.kh*g.kw*pix)), func(lo, hi int) { g.col2im(dcol, cols, dxs, lo, hi) })
	})
}

// Conv2DBackwardFilter accumulates dw += Σ_n dy_n·col_nᵀ, the gradient of
// conv2d with respect to w, and, unless dbias is nil, dbias += the sums of
// dy per output channel.
//
// The sum over samples must not race. When the threads take samples of
// their own (see conv.go), the first adds its groups onto dw and each
// other one sums its groups into its own copy, added onto dw at the end;
// the plan does so only where a copy is no larger than a column buffer
// (O ≤ g·P). Otherwise groups run one by one and each product is spread
// over tiles of dw.
func (d *Device) Conv2DBackwardFilter(x, dy, dw, dbias *tensor.Tensor, p tensor.Conv2DParams) {
	const op = "conv2d backward filter"
	g := convCheck(op, x, dw, dy, p)
	convBiasCheck(op, dbias, g.o)
	xd := d.data(op, x, x.Len())
	dyd := d.data(op, dy, dy.Len())
	dwd := d.data(op, dw, dw.Len())
	pl := newConvPlan(ConvBackwardFilter, g, d.pool.threads, d.ownThreads())
	buf, release := d.scratch(pl.elems())
	defer release()
	k, pix, in := g.cols(), g.pixels(), g.c*g.h*g.w
	partLen := g.o * k
	parts := buf[len(buf)-pl.parts:]

	d.convGroups(&pl, buf, func(e convExec, s convSlot, i0, n int) {
		cols := n * pix
		xs := xd[i0*in : (i0+n)*in]
		dys := dyd[i0*g.o*pix : (i0+n)*g.o*pix]
		src, dsrc := xs, dys
		if !g.direct() {
			src = s.cols[:k*cols]
			e.loop(n*k, max(1, elementGrain/pix), func(lo, hi int) { g.im2col(xs, src, cols, lo, hi) })
		} else if n > 1 {
			src = s.cols[:k*cols]
			e.loop(n*k, max(1, elementGrain/pix), func(lo, hi int) { gatherCols(xs, src, pix, k, n, lo, hi) })
		}
		if n > 1 {
			dsrc = s.outs[:g.o*cols]
			e.loop(n*g.o, max(1, elementGrain/pix), func(lo, hi int) { gatherCols(dys, dsrc, pix, g.o, n, lo, hi) })
		}
		acc, beta := dwd, float32(1)
		if e.d == nil && s.index > 0 {
			// A thread's own copy: its first product sets it.
			acc = parts[(s.index-1)*partLen : s.index*partLen]
			if s.first {
				beta = 0
			}
		}
		e.gemm(false, true, g.o, k, cols, 1, dsrc, cols, src, cols, beta, acc, k)
	})
	if pl.parts > 0 {
		d.pool.parallel(partLen, elementGrain, func(lo, hi int) {
			sum := dwd[lo:hi]
			for t := 0; t < pl.parts/partLen; t++ {
				for j, v := range parts[t*partLen+lo : t*partLen+hi] {
					sum[j] += v
				}
			}
		})
	}

	if dbias != nil {
		db := d.data(op, dbias, g.o)
		d.pool.parallel(g.o, max(1, elementGrain/(g.n*pix)), func(lo, hi int) {
			for o := lo; o < hi; o++ {
				s := 0.0 // float64: a channel may sum N·P terms, 10⁵ and more
				for i := 0; i < g.n; i++ {
					for _, v := range dyd[(i*g.o+o)*pix : (i*g.o+o+1)*pix] {
						s += float64(v)
					}
				}
				db[o] += float32(s)
			}
		})
	}
}

// col2im sets items [lo, hi) of the input gradient dx [·, C, H, W] of
// consecutive samples from their column gradient dcol [K, ld], sample s in
// columns [s·P, (s+1)·P): item s·C + c is channel c of sample s.
func (g *convGeom) col2im(dcol []float32, ld int, dx []float32, lo, hi int) {
	pix, in := g.pixels(), g.c*g.h*g.w
	var taps [convTapsMax]int32
	var tbl []int32
	padded := g.paddedRows()
	if !padded {
		tbl = g.tapTable(taps[:])
	}
	for it := lo; it < hi; {
		s := it / g.c
		end := min(hi, (s+1)*g.c)
		if padded {
			g.col2imPadded(dcol[s*pix:], ld, dx[s*in:(s+1)*in], it-s*g.c, end-s*g.c)
		} else if tbl != nil {
			g.col2imTaps(tbl, dcol[s*pix:], ld, dx[s*in:(s+1)*in], it-s*g.c, end-s*g.c)
		} else {
			g.col2imChannels(dcol[s*pix:], ld, dx[s*in:(s+1)*in], it-s*g.c, end-s*g.c)
		}
		it = end
	}
}

// col2imTaps is col2imChannels through the tap table tbl (see tapTable).
func (g *convGeom) col2imTaps(tbl []int32, dcol []float32, ld int, dx []float32, lo, hi int) {
	taps, pix, plane := g.kh*g.kw, g.pixels(), g.h*g.w
	for c := lo; c < hi; c++ {
		dxc := dx[c*plane : (c+1)*plane]
		clear(dxc)
		for t := 0; t < taps; t++ {
			r := c*taps + t
			src := dcol[r*ld : r*ld+pix]
			for p, off := range tbl[t*pix : (t+1)*pix] {
				if off >= 0 {
					dxc[off] += src[p]
				}
			}
		}
	}
}

// col2imChannels sets channels [lo, hi) of one sample's input gradient dx
// [C, H, W] from its column gradient dcol [K, P] (rows ld elements apart):
// each entry of row (c·KH +
// i)·KW + j, column oy·OW + ox, adds onto dx[c, oy·SH − PH + i, ox·SW − PW +
// j] unless that lies in the padding. A channel's rows write only to that
// channel, so channel ranges can run in parallel.
func (g *convGeom) col2imChannels(dcol []float32, ld int, dx []float32, lo, hi int) {
	sh, sw, ph, pw := g.p.StrideH, g.p.StrideW, g.p.PadH, g.p.PadW
	pix, plane := g.pixels(), g.h*g.w
	for c := lo; c < hi; c++ {
		dxc := dx[c*plane : (c+1)*plane]
		clear(dxc)
		for i := 0; i < g.kh; i++ {
			oy0, oy1 := convValid(g.h, g.oh, sh, ph, i)
			for j := 0; j < g.kw; j++ {
				ox0, ox1 := convValid(g.w, g.ow, sw, pw, j)
				if ox0 == ox1 {
					continue
				}
				r := (c*g.kh+i)*g.kw + j
				src := dcol[r*ld : r*ld+pix]
				ix0 := ox0*sw - pw + j
				if sw == 1 {
					if oy1 > oy0 {
						addRows(dxc[(oy0*sh-ph+i)*g.w+ix0:], sh*g.w, src[oy0*g.ow+ox0:], g.ow, oy1-oy0, ox1-ox0)
					}
					continue
				}
				for oy := oy0; oy < oy1; oy++ {
					in := src[oy*g.ow+ox0 : oy*g.ow+ox1]
					row := dxc[(oy*sh-ph+i)*g.w:]
					for t, ix := 0, ix0; t < len(in); t, ix = t+1, ix+sw {
						row[ix] += in[t]
					}
				}
			}
		}
	}
}
