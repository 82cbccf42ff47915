package cpu

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// adaptiveCheck checks that in [N, C, H, W] and out [N, C, OH, OW] live on
// d and agree in N and C, and returns the geometry and the bins of both
// axes.
func (d *Device) adaptiveCheck(op string, in, out *tensor.Tensor) (g poolGeom, rows, cols []poolSpan) {
	d.mustOwn(op, in)
	d.mustOwn(op, out)
	s, o := in.Shape(), out.Shape()
	if len(s) != 4 || len(o) != 4 || s[0] != o[0] || s[1] != o[1] {
		panic(fmt.Sprintf("cpu: %s: input shape %v and output shape %v, want [N, C, H, W] and [N, C, OH, OW]", op, s, o))
	}
	g = poolGeom{planes: s[0] * s[1], h: s[2], w: s[3], oh: o[2], ow: o[3]}
	return g, adaptiveBins(g.h, g.oh), adaptiveBins(g.w, g.ow)
}

// adaptiveBins returns the cells of an axis of size in pooled to out:
// cell i covers floor(i·in/out) to ceil((i+1)·in/out), as torch bins
// them; cells may overlap, and repeat inputs when out > in. When out
// divides in they are disjoint and cover the axis.
func adaptiveBins(in, out int) []poolSpan {
	b := make([]poolSpan, out)
	for i := range b {
		b[i] = poolSpan{i * in / out, ((i+1)*in + out - 1) / out}
	}
	return b
}

// AdaptiveAvgPool2DForward implements tensor.Kernels. Threads take whole
// planes; the sums are accumulated in float64, since a cell may be large
// (global pooling of a whole feature map). A cell as wide as the plane is
// one contiguous run, summed with several accumulators.
func (d *Device) AdaptiveAvgPool2DForward(x, y *tensor.Tensor) {
	g, rows, cols := d.adaptiveCheck("adaptive avgpool2d forward", x, y)
	xs, ys := Data(x), Data(y)
	in, out := g.h*g.w, g.oh*g.ow
	d.pool.parallel(g.planes, g.planeGrain(max(1, in/out)), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			xp, yp := xs[pl*in:(pl+1)*in], ys[pl*out:(pl+1)*out]
			for i, rb := range rows {
				yrow := yp[i*g.ow : (i+1)*g.ow]
				cols := cols[:len(yrow)]
				for j, cb := range cols {
					var sum float64
					if cb.lo == 0 && cb.hi == g.w {
						sum = sum64(xp[rb.lo*g.w : rb.hi*g.w])
					} else {
						for r := rb.lo; r < rb.hi; r++ {
							for _, v := range xp[r*g.w+cb.lo : r*g.w+cb.hi] {
								sum += float64(v)
							}
						}
					}
					yrow[j] = float32(sum / float64((rb.hi-rb.lo)*(cb.hi-cb.lo)))
				}
			}
		}
	})
}

// sum64 returns Σ x in float64, with four partial sums so that the
// additions do not wait on each other.
func sum64(x []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i <= len(x)-4; i += 4 {
		v := x[i : i+4 : i+4]
		s0 += float64(v[0])
		s1 += float64(v[1])
		s2 += float64(v[2])
		s3 += float64(v[3])
	}
	for _, v := range x[i:] {
		s0 += float64(v)
	}
	return (s0 + s1) + (s2 + s3)
}

// AdaptiveAvgPool2DBackward implements tensor.Kernels: each output's
// gradient, divided by its cell's size, is added to every input of the
// cell. Threads take whole planes. Cells may overlap, so dx is zeroed
// first, unless the output size divides the input's: then the cells tile
// the plane and each input is written once.
func (d *Device) AdaptiveAvgPool2DBackward(dy, dx *tensor.Tensor) {
	g, rows, cols := d.adaptiveCheck("adaptive avgpool2d backward", dx, dy)
	dys, dxs := Data(dy), Data(dx)
	in, out := g.h*g.w, g.oh*g.ow
	tiled := g.h%g.oh == 0 && g.w%g.ow == 0
	d.pool.parallel(g.planes, g.planeGrain(max(1, in/out)), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			gp, dxp := dys[pl*out:(pl+1)*out], dxs[pl*in:(pl+1)*in]
			if !tiled {
				clear(dxp)
			}
			for i, rb := range rows {
				grow := gp[i*g.ow : (i+1)*g.ow]
				cols := cols[:len(grow)]
				for j, cb := range cols {
					v := grow[j] / float32((rb.hi-rb.lo)*(cb.hi-cb.lo))
					for r := rb.lo; r < rb.hi; r++ {
						row := dxp[r*g.w+cb.lo : r*g.w+cb.hi]
						if tiled {
							for k := range row {
								row[k] = v
							}
						} else {
							for k := range row {
								row[k] += v
							}
						}
					}
				}
			}
		}
	})
}
