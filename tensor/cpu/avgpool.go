package cpu

import "github.com/pipecast/pipecast/tensor"

// AvgPool2DForward implements tensor.Kernels: each window's sum over the
// input divided by KH·KW (count_include_pad=True; with ceil_mode off no
// window reaches past the padding, so the divisor is always the full
// window). Threads take whole planes; each output row adds up its input
// rows' runs, the windows being worked out once per row and column.
func (d *Device) AvgPool2DForward(x, y *tensor.Tensor, p tensor.Pool2DParams) {
	g := d.poolCheck("avgpool2d forward", x, y, p)
	xs, ys := Data(x), Data(y)
	in, out := g.h*g.w, g.oh*g.ow
	rows, cols := g.spans(p)
	div := float32(p.KH * p.KW)
	d.pool.parallel(g.planes, g.planeGrain(p.KH*p.KW), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			xp, yp := xs[pl*in:(pl+1)*in], ys[pl*out:(pl+1)*out]
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
	})
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
// overlap, so dx is zeroed first and threads take whole planes.
func (d *Device) AvgPool2DBackward(dy, dx *tensor.Tensor, p tensor.Pool2DParams) {
	g := d.poolCheck("avgpool2d backward", dx, dy, p)
	dys, dxs := Data(dy), Data(dx)
	in, out := g.h*g.w, g.oh*g.ow
	rows, cols := g.spans(p)
	div := float32(p.KH * p.KW)
	d.pool.parallel(g.planes, g.planeGrain(p.KH*p.KW), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			gp, dxp := dys[pl*out:(pl+1)*out], dxs[pl*in:(pl+1)*in]
			clear(dxp)
			for i, rb := range rows {
				grow := gp[i*g.ow : (i+1)*g.ow]
				for r := rb.lo; r < rb.hi; r++ {
					rowSpread(dxp[r*g.w:(r+1)*g.w], grow, cols, div)
				}
			}
		}
	})
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
