package cpu

import "github.com/pipecast/pipecast/tensor"

// avgS1Stack is how many elements of dy/div an average pooling's stride-1
// backward keeps on the stack; larger planes take them from the heap, once
// per thread and call.
const avgS1Stack = 2048

// AvgPool2DForward implements tensor.Kernels: each window's sum over the
// input divided by KH·KW (count_include_pad=True; with ceil_mode off no
// window reaches past the padding, so the divisor is always the full
// window). Threads take whole planes. With stride 1 in both axes the
// sums run along the rows with straight-line code (s1Sums); otherwise
// each output row adds up its input rows' runs, the windows being worked
// out once per row and column. Both add in the same order, so they agree
// bit for bit.
func (d *Device) AvgPool2DForward(x, y *tensor.Tensor, p tensor.Pool2DParams) {
	g := d.poolCheck("avgpool2d forward", x, y, p)
	xs, ys := Data(x), Data(y)
	in, out := g.h*g.w, g.oh*g.ow
	rows, cols := g.spans(p)
	div := float32(p.KH * p.KW)
	s1 := p.StrideH == 1 && p.StrideW == 1
	d.pool.parallel(g.planes, g.planeGrain(p.KH*p.KW), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			xp, yp := xs[pl*in:(pl+1)*in], ys[pl*out:(pl+1)*out]
			if s1 {
				avgForwardS1(g, p).plane(yp, xp, div)
			} else {
				avgForwardPlane(yp, xp, g, rows, cols, div)
			}
		}
	})
}

// avgForwardPlane is AvgPool2DForward's generic kernel on one plane.
func avgForwardPlane(yp, xp []float32, g poolGeom, rows, cols []poolSpan, div float32) {
	for i, rb := range rows {
		yrow := yp[i*g.ow : (i+1)*g.ow]
		clear(yrow)
		for r := rb.lo; r < rb.hi; r++ {
			rowSum(yrow, xp[r*g.w:(r+1)*g.w], cols)
		}
		for j, v := range yrow {
			yrow[j] = v / div
		}
	}
}

// rowSum adds x's sum over cols[j] to y[j], for each j, in the order of
// x.
func rowSum(y, x []float32, cols []poolSpan) {
	cols = cols[:len(y)]
	for j, cb := range cols {
		s := y[j]
		switch v := x[cb.lo:cb.hi]; len(v) {
		case 2:
			s = s + v[0] + v[1]
		case 3:
			s = s + v[0] + v[1] + v[2]
		default:
			for _, e := range v {
				s += e
			}
		}
		y[j] = s
	}
}

// AvgPool2DBackward implements tensor.Kernels: each output's gradient,
// divided by KH·KW, is added to every input of its window. Windows may
// overlap, so threads take whole planes. With stride 1 in both axes each
// input sums the quotients of the outputs whose windows hold it
// (s1Sums, in the order the generic kernel adds them); otherwise dx is
// zeroed and each output row spreads its quotients over its window.
func (d *Device) AvgPool2DBackward(dy, dx *tensor.Tensor, p tensor.Pool2DParams) {
	g := d.poolCheck("avgpool2d backward", dx, dy, p)
	dys, dxs := Data(dy), Data(dx)
	in, out := g.h*g.w, g.oh*g.ow
	rows, cols := g.spans(p)
	div := float32(p.KH * p.KW)
	if p.StrideH == 1 && p.StrideW == 1 {
		d.pool.parallel(g.planes, g.planeGrain(p.KH*p.KW), func(lo, hi int) {
			var stack [avgS1Stack]float32
			q := stack[:min(out, len(stack))]
			if out > len(stack) {
				q = make([]float32, out)
			}
			for pl := lo; pl < hi; pl++ {
				avgBackwardPlaneS1(dxs[pl*in:(pl+1)*in], dys[pl*out:(pl+1)*out], q, g, p, div)
			}
		})
		return
	}
	d.pool.parallel(g.planes, g.planeGrain(p.KH*p.KW), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			avgBackwardPlane(dxs[pl*in:(pl+1)*in], dys[pl*out:(pl+1)*out], g, rows, cols, div)
		}
	})
}

// avgBackwardPlaneS1 is AvgPool2DBackward's stride-1 kernel on one plane;
// q holds the plane's quotients dy/div meanwhile.
func avgBackwardPlaneS1(dxp, gp, q []float32, g poolGeom, p tensor.Pool2DParams, div float32) {
	q = q[:len(gp)]
	for k, v := range gp {
		q[k] = v / div
	}
	avgBackwardS1(g, p).plane(dxp, q, 0)
}

// avgBackwardPlane is AvgPool2DBackward's generic kernel on one plane.
func avgBackwardPlane(dxp, gp []float32, g poolGeom, rows, cols []poolSpan, div float32) {
	clear(dxp)
	for i, rb := range rows {
		grow := gp[i*g.ow : (i+1)*g.ow]
		for r := rb.lo; r < rb.hi; r++ {
			rowSpread(dxp[r*g.w:(r+1)*g.w], grow, cols, div)
		}
	}
}

// rowSpread adds g[j]/div to x over cols[j], for each j.
func rowSpread(x, g []float32, cols []poolSpan, div float32) {
	cols = cols[:len(g)]
	for j, cb := range cols {
		v := g[j] / div
		row := x[cb.lo:cb.hi]
		for k := range row {
			row[k] += v
		}
	}
}
