package cpu

import "github.com/pipecast/pipecast/tensor"

// AvgPool2DForward implements tensor.Kernels: each window's sum over the
// input divided by KH·KW (count_include_pad=True; with ceil_mode off no
// window reaches past the padding, so the divisor is always the full
// window). Threads take whole planes.
func (d *Device) AvgPool2DForward(x, y *tensor.Tensor, p tensor.Pool2DParams) {
	g := d.poolCheck("avgpool2d forward", x, y, p)
	xs, ys := Data(x), Data(y)
	in, out := g.h*g.w, g.oh*g.ow
	div := float32(p.KH * p.KW)
	d.pool.parallel(g.planes, g.planeGrain(p.KH*p.KW), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			xp, yp := xs[pl*in:(pl+1)*in], ys[pl*out:(pl+1)*out]
			for i := 0; i < g.oh; i++ {
				for j := 0; j < g.ow; j++ {
					r0, r1, c0, c1 := g.window(i, j, p)
					var sum float32
					for r := r0; r < r1; r++ {
						for _, v := range xp[r*g.w+c0 : r*g.w+c1] {
							sum += v
						}
					}
					yp[i*g.ow+j] = sum / div
				}
			}
		}
	})
}

// AvgPool2DBackward implements tensor.Kernels: each output's gradient,
// divided by KH·KW, is added to every input of its window. Windows may
// overlap, so dx is zeroed first and threads take whole planes.
func (d *Device) AvgPool2DBackward(dy, dx *tensor.Tensor, p tensor.Pool2DParams) {
	g := d.poolCheck("avgpool2d backward", dx, dy, p)
	dys, dxs := Data(dy), Data(dx)
	in, out := g.h*g.w, g.oh*g.ow
	div := float32(p.KH * p.KW)
	d.pool.parallel(g.planes, g.planeGrain(p.KH*p.KW), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			gp, dxp := dys[pl*out:(pl+1)*out], dxs[pl*in:(pl+1)*in]
			clear(dxp)
			for i := 0; i < g.oh; i++ {
				for j := 0; j < g.ow; j++ {
					r0, r1, c0, c1 := g.window(i, j, p)
					v := gp[i*g.ow+j] / div
					for r := r0; r < r1; r++ {
						row := dxp[r*g.w+c0 : r*g.w+c1]
						for k := range row {
							row[k] += v
						}
					}
				}
			}
		}
	})
}
