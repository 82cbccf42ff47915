package cpu

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// linearBiasBlock is how many columns a bias-gradient pass sums at once:
// a row of dy contributes a contiguous run of this many values to as many
// float64 accumulators held on the stack.
const linearBiasBlock = 16

// LinearForward sets y = x·wᵀ + bias, torch's nn.Linear: x [N, in], w
// [out, in], bias [out] or nil, y [N, out].
func (d *Device) LinearForward(x, w, bias, y *tensor.Tensor) {
	n, in, out := linearShapes("linear forward", x, w, y)
	if bias != nil && (bias.Rank() != 1 || bias.Dim(0) != out) {
		panic(fmt.Sprintf("cpu: linear forward: bias %v, want [%d]", bias.Shape(), out))
	}
	xd := d.data("linear forward", x, x.Len())
	wd := d.data("linear forward", w, w.Len())
	yd := d.data("linear forward", y, y.Len())
	beta := float32(0)
	if bias != nil {
		// Seeding y with the bias lets the product add onto it: one pass
		// over y instead of two.
		bd := d.data("linear forward", bias, out)
		d.pool.parallel(n, max(1, elementGrain/out), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				copy(yd[i*out:(i+1)*out], bd)
			}
		})
		beta = 1
	}
	d.sgemm(false, true, n, out, in, 1, xd, in, wd, in, beta, yd, out)
}

// LinearBackwardData sets dx = dy·w: dy [N, out], w [out, in], dx [N, in].
func (d *Device) LinearBackwardData(dy, w, dx *tensor.Tensor) {
	n, in, out := linearShapes("linear backward data", dx, w, dy)
	dyd := d.data("linear backward data", dy, dy.Len())
	wd := d.data("linear backward data", w, w.Len())
	dxd := d.data("linear backward data", dx, dx.Len())
	d.sgemm(false, false, n, in, out, 1, dyd, out, wd, in, 0, dxd, in)
}

// LinearBackwardParams accumulates dw += dyᵀ·x and, unless dbias is nil,
// dbias += the column sums of dy: x [N, in], dy [N, out], dw [out, in],
// dbias [out].
func (d *Device) LinearBackwardParams(x, dy, dw, dbias *tensor.Tensor) {
	n, in, out := linearShapes("linear backward params", x, dw, dy)
	xd := d.data("linear backward params", x, x.Len())
	dyd := d.data("linear backward params", dy, dy.Len())
	dwd := d.data("linear backward params", dw, dw.Len())
	if dbias != nil && (dbias.Rank() != 1 || dbias.Dim(0) != out) {
		panic(fmt.Sprintf("cpu: linear backward params: dbias %v, want [%d]", dbias.Shape(), out))
	}
	d.sgemm(true, false, out, in, n, 1, dyd, out, xd, in, 1, dwd, in)
	if dbias == nil {
		return
	}
	db := d.data("linear backward params", dbias, out)
	blocks := (out + linearBiasBlock - 1) / linearBiasBlock
	d.pool.parallel(blocks, max(1, elementGrain/(linearBiasBlock*n)), func(lo, hi int) {
		for blk := lo; blk < hi; blk++ {
			j0, j1 := blk*linearBiasBlock, min((blk+1)*linearBiasBlock, out)
			var acc [linearBiasBlock]float64
			for i := 0; i < n; i++ {
				for j, v := range dyd[i*out+j0 : i*out+j1] {
					acc[j] += float64(v)
				}
			}
			for j := j0; j < j1; j++ {
				db[j] += float32(acc[j-j0])
			}
		}
	})
}

// linearShapes checks x [N, in], w [out, in] and y [N, out] (or their
// gradients) and returns N, in and out.
func linearShapes(op string, x, w, y *tensor.Tensor) (n, in, out int) {
	if x.Rank() != 2 || w.Rank() != 2 || y.Rank() != 2 ||
		x.Dim(1) != w.Dim(1) || y.Dim(0) != x.Dim(0) || y.Dim(1) != w.Dim(0) {
		panic(fmt.Sprintf("cpu: %s: x %v, w %v, y %v: want x [N, in], w [out, in], y [N, out]",
			op, x.Shape(), w.Shape(), y.Shape()))
	}
	return x.Dim(0), x.Dim(1), w.Dim(0)
}
