package cpu

import (
	"fmt"
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// poolGrain is how many window elements a thread's share of a pooling
// visits at least, so that small feature maps stay on one thread.
const poolGrain = 1 << 14

// poolGeom is the geometry of a pooling: planes = N·C planes of h×w
// inputs and oh×ow outputs.
type poolGeom struct{ planes, h, w, oh, ow int }

// planeGrain returns how many planes a thread takes at least when each
// output visits a window of k elements.
func (g poolGeom) planeGrain(k int) int { return max(1, poolGrain/max(1, g.oh*g.ow*k)) }

// poolCheck checks that in ([N, C, H, W], x or dx) and out (y or dy) live
// on d, that p is valid and that out is [N, C, OH, OW] as p.OutSize says.
func (d *Device) poolCheck(op string, in, out *tensor.Tensor, p tensor.Pool2DParams) poolGeom {
	d.mustOwn(op, in)
	d.mustOwn(op, out)
	if err := p.Validate(); err != nil {
		panic(fmt.Sprintf("cpu: %s: %v", op, err))
	}
	s := in.Shape()
	if len(s) != 4 {
		panic(fmt.Sprintf("cpu: %s: input shape %v, want [N, C, H, W]", op, s))
	}
	oh, ow := p.OutSize(s[2], s[3])
	want := tensor.Shape{s[0], s[1], oh, ow}
	if !want.Valid() || !out.Shape().Equal(want) {
		panic(fmt.Sprintf("cpu: %s: output shape %v for input %v, window %dx%d, stride %dx%d, padding %dx%d: want %v",
			op, out.Shape(), s, p.KH, p.KW, p.StrideH, p.StrideW, p.PadH, p.PadW, want))
	}
	return poolGeom{planes: s[0] * s[1], h: s[2], w: s[3], oh: oh, ow: ow}
}

// poolSpan is the input range [lo, hi) one output covers along an axis,
// clipped to the input.
type poolSpan struct{ lo, hi int }

// poolSpans returns the spans of out outputs along an axis of in inputs,
// for a window of k with stride s and padding pad.
func poolSpans(in, out, k, s, pad int) []poolSpan {
	sp := make([]poolSpan, out)
	for i := range sp {
		lo := i*s - pad
		sp[i] = poolSpan{max(lo, 0), min(lo+k, in)}
	}
	return sp
}

// spans returns the row and column spans of g's outputs under p.
func (g poolGeom) spans(p tensor.Pool2DParams) (rows, cols []poolSpan) {
	return poolSpans(g.h, g.oh, p.KH, p.StrideH, p.PadH), poolSpans(g.w, g.ow, p.KW, p.StrideW, p.PadW)
}

// MaxPool2DForward implements tensor.Kernels. Threads take whole planes;
// the window of each output is worked out once per row and column, not
// per output.
func (d *Device) MaxPool2DForward(x, y *tensor.Tensor, p tensor.Pool2DParams) {
	g := d.poolCheck("maxpool2d forward", x, y, p)
	xs, ys := Data(x), Data(y)
	in, out := g.h*g.w, g.oh*g.ow
	rows, cols := g.spans(p)
	d.pool.parallel(g.planes, g.planeGrain(p.KH*p.KW), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			xp, yp := xs[pl*in:(pl+1)*in], ys[pl*out:(pl+1)*out]
			for i, rb := range rows {
				yrow := yp[i*g.ow : (i+1)*g.ow]
				for j := range yrow {
					yrow[j] = float32(math.Inf(-1))
				}
				for r := rb.lo; r < rb.hi; r++ {
					rowMax(yrow, xp[r*g.w:(r+1)*g.w], cols)
				}
			}
		}
	})
}

// rowMax sets y[j] to the maximum of y[j] and x over cols[j], for each j.
// The builtin max has no branch to mispredict, and it agrees with torch's
// kernel on the value: a NaN wins, and so does any number over −∞ (only
// which of +0 and −0 is kept may differ, and they compare equal).
func rowMax(y, x []float32, cols []poolSpan) {
	cols = cols[:len(y)]
	for j, cb := range cols {
		m := y[j]
		switch v := x[cb.lo:cb.hi]; len(v) {
		case 2:
			m = max(m, v[0], v[1])
		case 3:
			m = max(m, v[0], v[1], v[2])
		default:
			for _, e := range v {
				m = max(m, e)
			}
		}
		y[j] = m
	}
}

// MaxPool2DBackward implements tensor.Kernels. It finds each window's
// maximum again in x (no indices pass from the forward) and adds dy there;
// windows overlap, so dx is zeroed first, and threads take whole planes so
// that no two of them add to the same element.
func (d *Device) MaxPool2DBackward(x, dy, dx *tensor.Tensor, p tensor.Pool2DParams) {
	const op = "maxpool2d backward"
	g := d.poolCheck(op, x, dy, p)
	tensor.SameShape(op, x, dx)
	d.mustOwn(op, dx)
	xs, dys, dxs := Data(x), Data(dy), Data(dx)
	in, out := g.h*g.w, g.oh*g.ow
	rows, cols := g.spans(p)
	d.pool.parallel(g.planes, g.planeGrain(p.KH*p.KW), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			xp, gp, dxp := xs[pl*in:(pl+1)*in], dys[pl*out:(pl+1)*out], dxs[pl*in:(pl+1)*in]
			clear(dxp)
			for i, rb := range rows {
				rowArgMaxAdd(dxp, xp, gp[i*g.ow:(i+1)*g.ow], g.w, rb, cols)
			}
		}
	})
}

// rowArgMaxAdd adds grow[j] to dxp at the maximum of x's window over the
// rows rb and the columns cols[j], for each j; full 3×3 windows take
// argMax3x3.
func rowArgMaxAdd(dxp, x, grow []float32, w int, rb poolSpan, cols []poolSpan) {
	cols = cols[:len(grow)]
	for j, cb := range cols {
		var at int
		if rb.hi-rb.lo == 3 && cb.hi-cb.lo == 3 {
			at = rb.lo*w + cb.lo + argMax3x3(x[rb.lo*w+cb.lo:], w)
		} else {
			at = windowArgMax(x, w, rb.lo, rb.hi, cb.lo, cb.hi)
		}
		dxp[at] += grow[j]
	}
}

// windowArgMax returns the index in x of the window's maximum as torch's
// CPU kernel records it: scanning rows then columns from −∞, it moves to
// a later element only if that one is strictly greater or NaN. So the
// first of tied maxima wins (the first of the window when all are −∞),
// and the last NaN when there are NaNs.
//
// It has no branch to mispredict: each element's order key goes into
// the high half of an int64 and its place in the window, counted down,
// into the low half (argMaxPack), so that the builtin max of those picks
// the greatest key and, among equal keys, the first. ±0 share a key; a
// window with a NaN, which the keys do not order as torch does, is
// scanned again for its last NaN.
func windowArgMax(x []float32, w, r0, r1, c0, c1 int) int {
	best, _ := argMaxPack(float32(math.Inf(-1)), 0, 32)
	nan := int32(0)
	for r := r0; r < r1; r++ {
		off := (r - r0) * w
		for k, v := range x[r*w+c0 : r*w+c1] {
			p, n := argMaxPack(v, off+k, 32)
			best, nan = max(best, p), nan|n
		}
	}
	if nan < 0 {
		return lastNaN(x, w, r0, r1, c0, c1)
	}
	return r0*w + c0 + argMaxUnpack(best, 32)
}

// argMax3x3 is windowArgMax for the 3×3 window whose top left is x[0],
// rows w apart: its index in x. A window without a sign bit set (after a
// ReLU, as in the models' poolings) takes a shorter way: its elements'
// bits order as their values do (a NaN's above +Inf's), so they are
// packed as they are. Others take windowArgMax.
func argMax3x3(x []float32, w int) int {
	a, b, c := x[0:3], x[w:w+3], x[2*w:2*w+3]
	p0, p1, p2 := argMaxPackBits(a[0], 0), argMaxPackBits(a[1], 1), argMaxPackBits(a[2], 2)
	p3, p4, p5 := argMaxPackBits(b[0], 3), argMaxPackBits(b[1], 4), argMaxPackBits(b[2], 5)
	p6, p7, p8 := argMaxPackBits(c[0], 6), argMaxPackBits(c[1], 7), argMaxPackBits(c[2], 8)
	if (p0|p1|p2|p3|p4|p5|p6|p7|p8)&(1<<(31+8)) != 0 {
		return windowArgMax(x, w, 0, 3, 0, 3)
	}
	best := max(p0, p1, p2, p3, p4, p5, p6, p7, p8)
	if best>>8 > 0x7f800000 {
		return lastNaN(x, w, 0, 3, 0, 3)
	}
	i := argMaxUnpack(best, 8)
	return i/3*w + i%3
}

// argMaxPackBits packs v's bits as argMaxPack packs its key (8 bits for
// i); for a v without its sign bit set they are its order key, a NaN's
// above all numbers'.
func argMaxPackBits(v float32, i int) int64 {
	return int64(math.Float32bits(v))<<8 | int64(255-i)
}

// argMaxPack returns v's order key shifted up by bits with the complement
// of i (< 1<<bits) below it, and a value that is negative if and only if
// v is a NaN. The key is an int32 that orders numbers as floating point
// does, with −0 and +0 equal: the sign and magnitude of v's bits taken
// to two's complement.
func argMaxPack(v float32, i, bits int) (packed int64, nan int32) {
	b := int32(math.Float32bits(v))
	s, mag := b>>31, b&math.MaxInt32
	low := int64(1)<<bits - 1
	return int64((mag^s)-s)<<bits | (low - int64(i)), mag + (1<<23 - 1)
}

// argMaxUnpack returns the i that argMaxPack packed.
func argMaxUnpack(packed int64, bits int) int {
	low := int64(1)<<bits - 1
	return int(low - packed&low)
}

// lastNaN returns the index in x of the window's last NaN, or that of
// its first element if it has none.
func lastNaN(x []float32, w, r0, r1, c0, c1 int) int {
	for r := r1 - 1; r >= r0; r-- {
		for k := c1 - 1; k >= c0; k-- {
			if v := x[r*w+k]; v != v {
				return r*w + k
			}
		}
	}
	return r0*w + c0
}
