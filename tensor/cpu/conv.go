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
// Deep in a network the images are small (ResNet-50 at 64×64 ends on 2×2,
// P = 4), and a product per sample would be a few columns wide: the
// weights would be packed for each sample and the micro-kernel would run
// on ragged slivers. So g samples are lowered together (convPlan picks g
// for about convTargetCols columns): their column matrices sit side by
// side in col [K, g·P] and one product gives y_g [O, g·P], which is then
// scattered into y [N, O, P] (a 1×1 convolution gathers its inputs into
// [C, g·P] likewise). The backward passes group the same way: dcol [K,
// g·P] = wᵀ · dy_g, then col2im per sample; dw += dy_g · colᵀ, a sum g·P
// deep.
//
// Groups are spread over the pool in two ways. When each thread's share of
// N/T samples makes groups at least convLeastCols wide, each of the T
// threads takes its own share with its own buffers and runs serial
// products: no synchronisation per group. The N mod T samples left, or
// all of them when the batch is too small for that, run group by group,
// each product on the whole pool. Devices whose products bring their own
// threads always run the latter. Every buffer, the serial products'
// packing buffers included, is recycled scratch accounted as Workspace
// while the kernel runs (ConvWorkspaceElems writes the total out).

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
	pl := newConvPlan(ConvForward, g, d.pool.threads, d.ownThreads())
	buf, release := d.scratch(pl.elems())
	defer release()
	k, pix, in := g.cols(), g.pixels(), g.c*g.h*g.w
	d.convGroups(&pl, buf, func(e convExec, s convSlot, i0, n int) {
		cols := n * pix
		xs := xd[i0*in : (i0+n)*in]
		ys := yd[i0*g.o*pix : (i0+n)*g.o*pix]
		// In place, the product reads a group's samples (direct) and
		// writes their outputs where they lie, without the gathered and
		// scattered copies (see colMatrix).
		inPlace := n > 1 && e.inPlace(pix)
		src := xs
		switch {
		case !g.direct():
			src = s.cols[:k*cols]
			e.loop(n*k, max(1, elementGrain/pix), func(lo, hi int) { g.im2col(xs, src, cols, lo, hi) })
		case n > 1 && !inPlace:
			src = s.cols[:k*cols]
			e.loop(n*k, max(1, elementGrain/pix), func(lo, hi int) { gatherCols(xs, src, pix, k, n, lo, hi) })
		}
		if n == 1 || inPlace {
			beta := float32(0)
			if bd != nil {
				// Seeding y with the bias lets the product add onto it.
				for i := range n * g.o {
					fillFloats(ys[i*pix:(i+1)*pix], bd[i%g.o])
				}
				beta = 1
			}
			b, c := plainMatrix(src, cols), plainMatrix(ys, pix)
			if inPlace {
				c = blockedMatrix(ys, pix, g.o*pix)
				if g.direct() {
					b = blockedMatrix(xs, pix, in)
				}
			}
			e.gemmViews(false, g.o, cols, k, 1, wd, k, b, beta, c)
			return
		}
		out := s.outs[:g.o*cols]
		e.gemm(false, false, g.o, cols, k, 1, wd, k, src, cols, 0, out, cols)
		e.loop(n*g.o, max(1, elementGrain/pix), func(lo, hi int) { scatterCols(out, ys, bd, pix, g.o, n, lo, hi) })
	})
}

// gatherStrided sets out[t] = in[t·stride]. Stride 2 (ResNet's stem and
// downsampling convolutions) runs four elements per step with one bounds
// check: the stem's im2col took about a quarter less time than with an
// element-wise loop.
func gatherStrided(out, in []float32, stride int) {
	t := 0
	if stride == 2 {
		for ; t+4 <= len(out); t += 4 {
			o := (*[4]float32)(out[t:])
			i := (*[7]float32)(in[2*t:])
			o[0], o[1], o[2], o[3] = i[0], i[2], i[4], i[6]
		}
	}
	for ; t < len(out); t++ {
		out[t] = in[t*stride]
	}
}

// fillFloats sets every element of s to v, doubling a filled prefix with
// copy (memmove's wide stores) rather than storing one element at a time.
func fillFloats(s []float32, v float32) {
	if len(s) == 0 {
		return
	}
	s[0] = v
	for n := 1; n < len(s); n *= 2 {
		copy(s[n:], s[:n])
	}
}

// im2col fills items [lo, hi) of the column matrix col [K, ld] of
// consecutive samples x [·, C, H, W], sample s in columns [s·P, (s+1)·P):
// item s·K + r is row r of sample s.
func (g *convGeom) im2col(x, col []float32, ld, lo, hi int) {
	k, pix, in := g.cols(), g.pixels(), g.c*g.h*g.w
	var taps [convTapsMax]int32
	var tbl []int32
	padded := g.paddedRows()
	if !padded {
		tbl = g.tapTable(taps[:])
	}
	for it := lo; it < hi; {
		s := it / k
		end := min(hi, (s+1)*k)
		if padded {
			g.im2colPadded(x[s*in:(s+1)*in], col[s*pix:], ld, it-s*k, end-s*k)
		} else if tbl != nil {
			g.im2colTaps(tbl, x[s*in:(s+1)*in], col[s*pix:], ld, it-s*k, end-s*k)
		} else {
			g.im2colRows(x[s*in:(s+1)*in], col[s*pix:], ld, it-s*k, end-s*k)
		}
		it = end
	}
}

// convTapsMax bounds the entries of a tap table (16 KiB, on the stack).
const convTapsMax = 4096

// tapTable returns, for narrow images, a table of buf's whose entry t·P +
// p, for kernel tap t = i·KW + j and output pixel p = oy·OW + ox, is the
// offset (oy·SH − PH + i)·W + ox·SW − PW + j in the input plane that the
// tap reads there, or −1 where that lies in the padding; nil for images
// whose rows are wide enough to copy (or for tables that would not fit).
// Narrow rows (ResNet's and VGG's last stages, 2 to 8 pixels) make the
// per-row work of im2colRows and col2imChannels dominate; the table lets
// every row of every channel run as one flat loop.
func (g *convGeom) tapTable(buf []int32) []int32 {
	taps, pix := g.kh*g.kw, g.pixels()
	if g.ow >= convTapsMinWidth || taps*pix > len(buf) {
		return nil
	}
	tbl := buf[:taps*pix]
	for t := 0; t < taps; t++ {
		i, j := t/g.kw, t%g.kw
		for oy := 0; oy < g.oh; oy++ {
			iy := oy*g.p.StrideH - g.p.PadH + i
			for ox := 0; ox < g.ow; ox++ {
				ix := ox*g.p.StrideW - g.p.PadW + j
				v := int32(-1)
				if iy >= 0 && iy < g.h && ix >= 0 && ix < g.w {
					v = int32(iy*g.w + ix)
				}
				tbl[t*pix+oy*g.ow+ox] = v
			}
		}
	}
	return tbl
}

// convTapsMinWidth is the output width from which rows are copied rather
// than gathered through a tap table.
const convTapsMinWidth = 16

// im2colTaps is im2colRows through the tap table tbl.
func (g *convGeom) im2colTaps(tbl []int32, x, col []float32, ld, lo, hi int) {
	taps, pix, plane := g.kh*g.kw, g.pixels(), g.h*g.w
	for r := lo; r < hi; r++ {
		c, t := r/taps, r%taps
		xc := x[c*plane : (c+1)*plane]
		dst := col[r*ld : r*ld+pix]
		for p, off := range tbl[t*pix : (t+1)*pix] {
			v := float32(0)
			if off >= 0 {
				v = xc[off]
			}
			dst[p] = v
		}
	}
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
// (rows ld elements apart) from x [C, H, W]: row (c·KH + i)·KW + j holds
// x[c, oy·SH − PH + i, ox·SW − PW + j] in column oy·OW + ox, and 0 where
// that lies in the padding.
func (g *convGeom) im2colRows(x, col []float32, ld, lo, hi int) {
	sh, sw, ph, pw := g.p.StrideH, g.p.StrideW, g.p.PadH, g.p.PadW
	pix, plane := g.pixels(), g.h*g.w
	for r := lo; r < hi; r++ {
		c, i, j := r/(g.kh*g.kw), r/g.kw%g.kh, r%g.kw
		xc := x[c*plane : (c+1)*plane]
		dst := col[r*ld : r*ld+pix]
		oy0, oy1 := convValid(g.h, g.oh, sh, ph, i)
		ox0, ox1 := convValid(g.w, g.ow, sw, pw, j)
		clear(dst[:oy0*g.ow])
		clear(dst[oy1*g.ow:])
		if sw == 1 && ox0 < ox1 {
			// The taps' rows in one band; only the padding columns
			// either side of it need clearing.
			for oy := oy0; oy < oy1; oy++ {
				clear(dst[oy*g.ow : oy*g.ow+ox0])
				clear(dst[oy*g.ow+ox1 : (oy+1)*g.ow])
			}
			if oy1 > oy0 {
				copyRows(dst[oy0*g.ow+ox0:], g.ow, xc[(oy0*sh-ph+i)*g.w+ox0-pw+j:], sh*g.w, oy1-oy0, ox1-ox0)
			}
			continue
		}
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
			gatherStrided(out[ox0:ox1], src[ix0:ix0+(ox1-ox0-1)*sw+1], sw)
		}
	}
}
