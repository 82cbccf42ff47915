package cpu

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// adaptiveCheck checks that in [N, C, H, W] and out [N, C, OH, OW] live on
// d and agree in N and C, and returns the geometry and the bins of both
// axes.
func (d *Device) adaptiveCheck(op string, in, out *tensor.Tensor) (g poolGeom, rows, cols []adaptiveBin) {
	d.mustOwn(op, in)
	d.mustOwn(op, out)
	s, o := in.Shape(), out.Shape()
	if len(s) != 4 || len(o) != 4 || s[0] != o[0] || s[1] != o[1] {
		panic(fmt.Sprintf("cpu: %s: input shape %v and output shape %v, want [N, C, H, W] and [N, C, OH, OW]", op, s, o))
	}
	g = poolGeom{planes: s[0] * s[1], h: s[2], w: s[3], oh: o[2], ow: o[3]}
	return g, adaptiveBins(g.h, g.oh), adaptiveBins(g.w, g.ow)
}

// adaptiveBin is the input range [lo, hi) of one output cell along an
// axis.
type adaptiveBin struct{ lo, hi int }

// adaptiveBins returns the cells of an axis of size in pooled to out:
// cell i covers floor(i·in/out) to ceil((i+1)·in/out), as torch bins
// them; cells may overlap, and repeat inputs when out > in.
func adaptiveBins(in, out int) []adaptiveBin {
	b := make([]adaptiveBin, out)
	for i := range b {
		b[i] = adaptiveBin{i * in / out, ((i+1)*in + out - 1) / out}
	}
	return b
}

// AdaptiveAvgPool2DForward implements tensor.Kernels. Threads take whole
// planes; the sums are accumulated in float64, since a cell may be large
// (global pooling of a whole feature map).
func (d *Device) AdaptiveAvgPool2DForward(x, y *tensor.Tensor) {
	g, rows, cols := d.adaptiveCheck("adaptive avgpool2d forward", x, y)
	xs, ys := Data(x), Data(y)
	in, out := g.h*g.w, g.oh*g.ow
	d.pool.parallel(g.planes, g.planeGrain(max(1, in/out)), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			xp, yp := xs[pl*in:(pl+1)*in], ys[pl*out:(pl+1)*out]
			for i, rb := range rows {
				for j, cb := range cols {
					sum := 0.0
					for r := rb.lo; r < rb.hi; r++ {
						for _, v := range xp[r*g.w+cb.lo : r*g.w+cb.hi] {
							sum += float64(v)
						}
					}
					yp[i*g.ow+j] = float32(sum / float64((rb.hi-rb.lo)*(cb.hi-cb.lo)))
				}
			}
		}
	})
}

// AdaptiveAvgPool2DBackward implements tensor.Kernels: each output's
// gradient, divided by its cell's size, is added to every input of the
// cell. Cells may overlap, so dx is zeroed first and threads take whole
// planes.
func (d *Device) AdaptiveAvgPool2DBackward(dy, dx *tensor.Tensor) {
	g, rows, cols := d.adaptiveCheck("adaptive avgpool2d backward", dx, dy)
	dys, dxs := Data(dy), Data(dx)
	in, out := g.h*g.w, g.oh*g.ow
	d.pool.parallel(g.planes, g.planeGrain(max(1, in/out)), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			gp, dxp := dys[pl*out:(pl+1)*out], dxs[pl*in:(pl+1)*in]
			clear(dxp)
			for i, rb := range rows {
				for j, cb := range cols {
					v := gp[i*g.ow+j] / float32((rb.hi-rb.lo)*(cb.hi-cb.lo))
					for r := rb.lo; r < rb.hi; r++ {
						row := dxp[r*g.w+cb.lo : r*g.w+cb.hi]
						for k := range row {
							row[k] += v
						}
					}
				}
			}
		}
	})
}
