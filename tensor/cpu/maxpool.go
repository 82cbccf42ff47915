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

// window returns the rows [r0, r1) and columns [c0, c1) of the input that
// output (i, j)'s window covers, clipped to the plane.
func (g poolGeom) window(i, j int, p tensor.Pool2DParams) (r0, r1, c0, c1 int) {
	r0, c0 = i*p.StrideH-p.PadH, j*p.StrideW-p.PadW
	r1, c1 = min(r0+p.KH, g.h), min(c0+p.KW, g.w)
	return max(r0, 0), r1, max(c0, 0), c1
}

// MaxPool2DForward implements tensor.Kernels. Threads take whole planes.
func (d *Device) MaxPool2DForward(x, y *tensor.Tensor, p tensor.Pool2DParams) {
	g := d.poolCheck("maxpool2d forward", x, y, p)
	xs, ys := Data(x), Data(y)
	in, out := g.h*g.w, g.oh*g.ow
	d.pool.parallel(g.planes, g.planeGrain(p.KH*p.KW), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			xp, yp := xs[pl*in:(pl+1)*in], ys[pl*out:(pl+1)*out]
			for i := 0; i < g.oh; i++ {
				for j := 0; j < g.ow; j++ {
					r0, r1, c0, c1 := g.window(i, j, p)
					yp[i*g.ow+j] = windowMax(xp, g.w, r0, r1, c0, c1)
				}
			}
		}
	})
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
	d.pool.parallel(g.planes, g.planeGrain(p.KH*p.KW), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			xp, gp, dxp := xs[pl*in:(pl+1)*in], dys[pl*out:(pl+1)*out], dxs[pl*in:(pl+1)*in]
			clear(dxp)
			for i := 0; i < g.oh; i++ {
				for j := 0; j < g.ow; j++ {
					r0, r1, c0, c1 := g.window(i, j, p)
					at := windowArgMax(xp, g.w, r0, r1, c0, c1)
					dxp[at] += gp[i*g.ow+j]
				}
			}
		}
	})
}

// windowMax returns the maximum of rows [r0, r1) and columns [c0, c1) of
// the plane x of width w. The builtin max has no branch to mispredict,
// and it agrees with torch's kernel on the value: a NaN wins, and so does
// any number over −∞ (only which of +0 and −0 is kept may differ, and
// they compare equal).
func windowMax(x []float32, w, r0, r1, c0, c1 int) float32 {
	best := float32(math.Inf(-1))
	for r := r0; r < r1; r++ {
		for _, v := range x[r*w+c0 : r*w+c1] {
			best = max(best, v)
		}
	}
	return best
}

// windowArgMax returns the index in x of the window's maximum as torch's
// CPU kernel records it: scanning rows then columns from −∞, it moves to
// a later element only if that one is strictly greater or NaN. So the
// first of tied maxima wins (the first of the window when all are −∞),
// and the last NaN when there are NaNs.
func windowArgMax(x []float32, w, r0, r1, c0, c1 int) int {
	best, at := float32(math.Inf(-1)), r0*w+c0
	for r := r0; r < r1; r++ {
		for k, v := range x[r*w+c0 : r*w+c1] {
			if v > best || math.IsNaN(float64(v)) {
				best, at = v, r*w+c0+k
			}
		}
	}
	return at
}
