package cpu

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// Convolutions are lowered to matrix products (im2col, as in Chellapilla,
// Puri and Simard, "High Performance Convolutional Neural Networks for
// Document Processing", 2006): for one sample, the column matrix col [K, P]
// with K = C·KH·KW and P = OH·OW holds in row (c·KH + i)·KW + j the input
// values that kernel tap (c, i, j) meets at each output position, so that
// y [O, P] = w [O, K] · col. A 1×1 convolution with stride 1 and no padding
// needs no column matrix: the sample x [C, H·W] already is one.
//
// Samples are spread over the pool in two ways. While at least T samples
// remain, each of the T threads takes its own share of samples with its own
// column buffer and runs serial products: no synchronisation per sample.
// The last N mod T samples (all of them when N < T, as with batch 1) run one
// at a time, each product on the whole pool.

// convGeom holds a convolution's sizes.
type convGeom struct {
	n, c, h, w int // input
	o, kh, kw  int // weights
	oh, ow     int // output
	p          tensor.Conv2DParams
}

// cols is K = C·KH·KW, the rows of the column matrix.
func (g *convGeom) cols() int { return g.c * g.kh * g.kw }

// pixels is P = OH·OW, the columns of the column matrix.
func (g *convGeom) pixels() int { return g.oh * g.ow }

// direct reports a 1×1, stride-1, unpadded convolution, whose input needs
// no im2col.
func (g *convGeom) direct() bool {
	return g.kh == 1 && g.kw == 1 && g.p.StrideH == 1 && g.p.StrideW == 1 && g.p.PadH == 0 && g.p.PadW == 0
}

// convCheck validates p, x [N, C, H, W], w [O, C, KH, KW] and y [N, O, OH,
// OW] (or the gradients in their places) and returns the sizes.
func convCheck(op string, x, w, y *tensor.Tensor, p tensor.Conv2DParams) convGeom {
	if err := p.Validate(); err != nil {
		panic(fmt.Sprintf("cpu: %s: %v", op, err))
	}
	if x.Rank() != 4 || w.Rank() != 4 || y.Rank() != 4 {
		panic(fmt.Sprintf("cpu: %s: input %v, weights %v, output %v: all must be 4-D", op, x.Shape(), w.Shape(), y.Shape()))
	}
	g := convGeom{n: x.Dim(0), c: x.Dim(1), h: x.Dim(2), w: x.Dim(3), o: w.Dim(0), kh: w.Dim(2), kw: w.Dim(3), p: p}
	if w.Dim(1) != g.c {
		panic(fmt.Sprintf("cpu: %s: weights %v take %d input channels, input %v has %d", op, w.Shape(), w.Dim(1), x.Shape(), g.c))
	}
	if g.h+2*p.PadH < g.kh || g.w+2*p.PadW < g.kw {
		panic(fmt.Sprintf("cpu: %s: kernel %d×%d larger than the input %v padded by %d×%d", op, g.kh, g.kw, x.Shape(), p.PadH, p.PadW))
	}
	g.oh, g.ow = p.OutSize(g.h, g.w, g.kh, g.kw)
	if want := (tensor.Shape{g.n, g.o, g.oh, g.ow}); !y.Shape().Equal(want) {
		panic(fmt.Sprintf("cpu: %s: output %v, want %v for input %v, weights %v, stride %d×%d, padding %d×%d",
			op, y.Shape(), want, x.Shape(), w.Shape(), p.StrideH, p.StrideW, p.PadH, p.PadW))
	}
	return g
}

// convBiasCheck panics unless bias, when not nil, is [O].
func convBiasCheck(op string, bias *tensor.Tensor, o int) {
	if bias != nil && (bias.Rank() != 1 || bias.Dim(0) != o) {
		panic(fmt.Sprintf("cpu: %s: bias %v, want [%d]", op, bias.Shape(), o))
	}
}

// Conv2DForward sets y = conv(x, w) + bias, torch's conv2d with groups 1
// and dilation 1.
func (d *Device) Conv2DForward(x, w, bias, y *tensor.Tensor, p tensor.Conv2DParams) {
	const op = "conv2d forward"
	g := convCheck(op, x, w, y, p)
	convBiasCheck(op, bias, g.o)
	xd := d.data(op, x, x.Len())
	wd := d.data(op, w, w.Len())
	yd := d.data(op, y, y.Len())
	var bd []float32
	if bias != nil {
		bd = d.data(op, bias, g.o)
	}
	k, pix := g.cols(), g.pixels()
	var col []float32
	if !g.direct() {
		ws := d.workspace(d.convSlots(g.n) * k * pix)
		defer ws.Release()
		col = Data(ws)
	}
	d.convSamples(g.n, true, func(e convExec, slot, i int) {
		xs := xd[i*g.c*g.h*g.w : (i+1)*g.c*g.h*g.w]
		ys := yd[i*g.o*pix : (i+1)*g.o*pix]
		src := xs
		if col != nil {
			src = col[slot*k*pix : (slot+1)*k*pix]
			e.loop(k, max(1, elementGrain/pix), func(lo, hi int) { g.im2colRows(xs, src, lo, hi) })
		}
		beta := float32(0)
		if bd != nil {
			// Seeding y with the bias lets the product add onto it.
			for o, b := range bd {
				row := ys[o*pix : (o+1)*pix]
				for j := range row {
					row[j] = b
				}
			}
			beta = 1
		}
		e.gemm(false, false, g.o, pix, k, 1, wd, k, src, pix, beta, ys, pix)
	})
}

// convSlots is how many per-thread buffers convSamples needs for n
// samples: one per thread when threads take samples of their own, else
// one.
func (d *Device) convSlots(n int) int {
	if d.pool.threads > 1 && n >= d.pool.threads {
		return d.pool.threads
	}
	return 1
}

// convSamples calls fn(e, slot, i) for every sample i < n, fn using the
// buffers of slot and running its loops and products through e. With
// perThread, as many samples as divide evenly run T at a time, one per
// thread and slot, each thread on its own consecutive samples; the rest,
// or all without perThread, run one by one in slot 0 on the whole pool.
func (d *Device) convSamples(n int, perThread bool, fn func(e convExec, slot, i int)) {
	start := 0
	if t := d.convSlots(n); perThread && t > 1 {
		per := n / t
		d.pool.parallel(t, 1, func(lo, hi int) {
			for s := lo; s < hi; s++ {
				for i := s * per; i < (s+1)*per; i++ {
					fn(convExec{}, s, i)
				}
			}
		})
		start = t * per
	}
	for i := start; i < n; i++ {
		fn(convExec{d: d}, 0, i)
	}
}

// convExec runs one sample's loops and products: on the device's whole
// pool when d is set, else on the calling thread (which is then one of the
// pool's, so it must not use the pool again).
type convExec struct{ d *Device }

func (e convExec) gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if e.d != nil {
		e.d.sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	sgemmSerial(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func (e convExec) loop(n, grain int, fn func(lo, hi int)) {
	if e.d != nil {
		e.d.pool.parallel(n, grain, fn)
		return
	}
	fn(0, n)
}

// convValid returns the outputs [o0, o1) along one axis whose input index
// o·stride − pad + tap lies inside [0, size); the others read padding.
func convValid(size, out, stride, pad, tap int) (o0, o1 int) {
	if lead := pad - tap; lead > 0 {
		o0 = min((lead+stride-1)/stride, out)
	}
	if last := size - 1 + pad - tap; last >= 0 {
		o1 = min(last/stride+1, out)
	}
	return o0, max(o1, o0)
}

// im2colRows fills rows [lo, hi) of one sample's column matrix col [K, P]
// from x [C, H, W]: row (c·KH + i)·KW + j holds x[c, oy·SH − PH + i, ox·SW −
// PW + j] in column oy·OW + ox, and 0 where that lies in the padding.
func (g *convGeom) im2colRows(x, col []float32, lo, hi int) {
	sh, sw, ph, pw := g.p.StrideH, g.p.StrideW, g.p.PadH, g.p.PadW
	pix, plane := g.pixels(), g.h*g.w
	for r := lo; r < hi; r++ {
		c, i, j := r/(g.kh*g.kw), r/g.kw%g.kh, r%g.kw
		xc := x[c*plane : (c+1)*plane]
		dst := col[r*pix : (r+1)*pix]
		oy0, oy1 := convValid(g.h, g.oh, sh, ph, i)
		ox0, ox1 := convValid(g.w, g.ow, sw, pw, j)
		clear(dst[:oy0*g.ow])
		clear(dst[oy1*g.ow:])
		for oy := oy0; oy < oy1; oy++ {
			out := dst[oy*g.ow : (oy+1)*g.ow]
			clear(out[:ox0])
			clear(out[ox1:])
			if ox0 == ox1 {
				continue
			}
			ix0 := ox0*sw - pw + j
			src := xc[(oy*sh-ph+i)*g.w:]
			if sw == 1 {
				copy(out[ox0:ox1], src[ix0:ix0+ox1-ox0])
				continue
			}
			for ox, ix := ox0, ix0; ox < ox1; ox, ix = ox+1, ix+sw {
				out[ox] = src[ix]
			}
		}
	}
}
