package cpu

import (
	"github.com/pipecast/pipecast/tensor"
)

// Conv2DBackwardData sets dx, the gradient of conv2d with respect to x,
// from dy: per sample, dcol [K, P] = wᵀ·dy, which col2im adds back onto
// the input positions each column entry came from.
func (d *Device) Conv2DBackwardData(dy, w, dx *tensor.Tensor, p tensor.Conv2DParams) {
	const op = "conv2d backward data"
	g := convCheck(op, dx, w, dy, p)
	dyd := d.data(op, dy, dy.Len())
	wd := d.data(op, w, w.Len())
	dxd := d.data(op, dx, dx.Len())
	k, pix, in := g.cols(), g.pixels(), g.c*g.h*g.w
	var dcol []float32
	if !g.direct() {
		ws := d.workspace(d.convSlots(g.n) * k * pix)
		defer ws.Release()
		dcol = Data(ws)
	}
	d.convSamples(g.n, true, func(e convExec, slot, i int) {
		dys := dyd[i*g.o*pix : (i+1)*g.o*pix]
		dxs := dxd[i*in : (i+1)*in]
		if dcol == nil {
			e.gemm(true, false, g.c, pix, g.o, 1, wd, k, dys, pix, 0, dxs, pix)
			return
		}
		buf := dcol[slot*k*pix : (slot+1)*k*pix]
		e.gemm(true, false, k, pix, g.o, 1, wd, k, dys, pix, 0, buf, pix)
		e.loop(g.c, max(1, elementGrain/(g.kh*g.kw*pix)), func(lo, hi int) { g.col2imChannels(buf, dxs, lo, hi) })
	})
}

// Conv2DBackwardFilter accumulates dw += Σ_n dy_n·col_nᵀ, the gradient of
// conv2d with respect to w, and, unless dbias is nil, dbias += the sums of
// dy per output channel.
//
// The sum over samples must not race. Where a per-thread copy of dw is no
// larger than a column buffer (O ≤ P, the early, large-image layers), each
// thread sums its own samples into its own copy and the copies are added
// at the end; otherwise (deep layers with small images and many channels)
// samples run one by one and each product is spread over tiles of dw.
func (d *Device) Conv2DBackwardFilter(x, dy, dw, dbias *tensor.Tensor, p tensor.Conv2DParams) {
	const op = "conv2d backward filter"
	g := convCheck(op, x, dw, dy, p)
	convBiasCheck(op, dbias, g.o)
	xd := d.data(op, x, x.Len())
	dyd := d.data(op, dy, dy.Len())
	dwd := d.data(op, dw, dw.Len())
	k, pix, in := g.cols(), g.pixels(), g.c*g.h*g.w

	perThread := g.o <= pix
	slots := 1
	if perThread {
		slots = d.convSlots(g.n)
	}
	colLen, partLen := 0, 0
	if !g.direct() {
		colLen = k * pix
	}
	if slots > 1 {
		partLen = g.o * k
	}
	var col, parts []float32
	if size := slots * (colLen + partLen); size > 0 {
		ws := d.workspace(size)
		defer ws.Release()
		all := Data(ws)
		col, parts = all[:slots*colLen], all[slots*colLen:]
	}

	// Per-thread copies start from zero (workspace is zeroed); products on
	// the whole pool add straight onto dw.
	d.convSamples(g.n, perThread, func(e convExec, slot, i int) {
		xs := xd[i*in : (i+1)*in]
		dys := dyd[i*g.o*pix : (i+1)*g.o*pix]
		src := xs
		if colLen > 0 {
			src = col[slot*colLen : (slot+1)*colLen]
			e.loop(k, max(1, elementGrain/pix), func(lo, hi int) { g.im2colRows(xs, src, lo, hi) })
		}
		acc := dwd
		if e.d == nil && partLen > 0 {
			acc = parts[slot*partLen : (slot+1)*partLen]
		}
		e.gemm(false, true, g.o, k, pix, 1, dys, pix, src, pix, 1, acc, k)
	})
	if partLen > 0 {
		d.pool.parallel(partLen, elementGrain, func(lo, hi int) {
			sum := parts[lo:hi]
			for s := 1; s < slots; s++ {
				for j, v := range parts[s*partLen+lo : s*partLen+hi] {
					sum[j] += v
				}
			}
			for j, v := range sum {
				dwd[lo+j] += v
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

// col2imChannels sets channels [lo, hi) of one sample's input gradient dx
// [C, H, W] from its column gradient dcol [K, P]: each entry of row (c·KH +
// i)·KW + j, column oy·OW + ox, adds onto dx[c, oy·SH − PH + i, ox·SW − PW +
// j] unless that lies in the padding. A channel's rows write only to that
// channel, so channel ranges can run in parallel.
func (g *convGeom) col2imChannels(dcol, dx []float32, lo, hi int) {
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
				src := dcol[r*pix : (r+1)*pix]
				ix0 := ox0*sw - pw + j
				for oy := oy0; oy < oy1; oy++ {
					in := src[oy*g.ow+ox0 : oy*g.ow+ox1]
					row := dxc[(oy*sh-ph+i)*g.w:]
					if sw == 1 {
						row = row[ix0 : ix0+len(in)]
						for t, v := range in {
							row[t] += v
						}
						continue
					}
					for t, ix := 0, ix0; t < len(in); t, ix = t+1, ix+sw {
						row[ix] += in[t]
					}
				}
			}
		}
	}
}
