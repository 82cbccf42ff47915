package cuda

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// Gemm sets c = alpha·op(a)·op(b) + beta·c for 2-D tensors, with the
// driver's BLAS where it has one, else pc_sgemm. c must not share memory
// with a or b. With beta 0, c's previous contents are ignored (a NaN
// there does not propagate), as in BLAS.
func (d *Device) Gemm(transA, transB bool, alpha float32, a, b *tensor.Tensor, beta float32, c *tensor.Tensor) {
	const op = "gemm"
	m, n, k := tensor.GemmDims(transA, transB, a, b, c)
	pa, pb, pc := d.ptr(op, a, a.Len()), d.ptr(op, b, b.Len()), d.ptr(op, c, c.Len())
	d.sgemm(op, transA, transB, m, n, k, alpha, pa, a.Dim(1), pb, b.Dim(1), beta, pc, n)
}

// sgemm sets c = alpha·op(a)·op(b) + beta·c on row-major matrices with
// row strides lda, ldb and ldc: op(a) m×k, op(b) k×n. Every product of
// the device goes through it.
func (d *Device) sgemm(op string, transA, transB bool, m, n, k int, alpha float32, a Ptr, lda int, b Ptr, ldb int, beta float32, c Ptr, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if d.blas != nil {
		d.check(op+": blas", d.blas.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
		return
	}
	d.launchSgemm(gridTiles(m, n), blockTile, flag(transA), flag(transB),
		i32(op, m), i32(op, n), i32(op, k), alpha, a, i32(op, lda), b, i32(op, ldb), beta, c, i32(op, ldc))
}

// sgemmBatched does batch products of sgemm's form, product z on a +
// z·strideA, b + z·strideB and c + z·strideC (strides in elements): the
// BLAS's strided batch where the device has one, else pc_sgemm_batched,
// whose grid takes up to maxGridBlocks products along z per launch.
func (d *Device) sgemmBatched(op string, transA, transB bool, m, n, k int, alpha float32, a Ptr, lda int, strideA int64,
	b Ptr, ldb int, strideB int64, beta float32, c Ptr, ldc int, strideC int64, batch int) {
	if m == 0 || n == 0 || batch == 0 {
		return
	}
	if d.blas != nil {
		d.check(op+": blas", d.blas.SgemmStridedBatched(transA, transB, m, n, k, alpha, a, lda, strideA,
			b, ldb, strideB, beta, c, ldc, strideC, batch))
		return
	}
	grid := gridTiles(m, n)
	for z0 := 0; z0 < batch; z0 += maxGridBlocks {
		grid[2] = uint32(min(batch-z0, maxGridBlocks))
		z := int64(z0)
		d.launchSgemmBatched(grid, blockTile, flag(transA), flag(transB), i32(op, m), i32(op, n), i32(op, k), alpha,
			a.Add(int(z*strideA)), i32(op, lda), strideA, b.Add(int(z*strideB)), i32(op, ldb), strideB,
			beta, c.Add(int(z*strideC)), i32(op, ldc), strideC)
	}
}

// LinearForward sets y = x·wᵀ + bias, torch's nn.Linear: x [N, in], w
// [out, in], bias [out] or nil, y [N, out]. The bias is added after the
// product (pc_bias_rows).
func (d *Device) LinearForward(x, w, bias, y *tensor.Tensor) {
	const op = "linear forward"
	n, in, out := linearShapes(op, x, w, y)
	if bias != nil && (bias.Rank() != 1 || bias.Dim(0) != out) {
		panic(fmt.Sprintf("cuda: linear forward: bias %v, want [%d]", bias.Shape(), out))
	}
	px, pw, py := d.ptr(op, x, x.Len()), d.ptr(op, w, w.Len()), d.ptr(op, y, y.Len())
	d.sgemm(op, false, true, n, out, in, 1, px, in, pw, in, 0, py, out)
	if bias != nil {
		d.launchBiasRows(gridStride(int64(n)*int64(out)), block1D, py, d.ptr(op, bias, out), int64(n), i32(op, out))
	}
}

// LinearBackwardData sets dx = dy·w: dy [N, out], w [out, in], dx [N, in].
func (d *Device) LinearBackwardData(dy, w, dx *tensor.Tensor) {
	const op = "linear backward data"
	n, in, out := linearShapes(op, dx, w, dy)
	pdy, pw, pdx := d.ptr(op, dy, dy.Len()), d.ptr(op, w, w.Len()), d.ptr(op, dx, dx.Len())
	d.sgemm(op, false, false, n, in, out, 1, pdy, out, pw, in, 0, pdx, in)
}

// LinearBackwardParams accumulates dw += dyᵀ·x and, unless dbias is nil,
// dbias += the column sums of dy (pc_col_sums_acc): x [N, in], dy [N,
// out], dw [out, in], dbias [out].
func (d *Device) LinearBackwardParams(x, dy, dw, dbias *tensor.Tensor) {
	const op = "linear backward params"
	n, in, out := linearShapes(op, x, dw, dy)
	if dbias != nil && (dbias.Rank() != 1 || dbias.Dim(0) != out) {
		panic(fmt.Sprintf("cuda: linear backward params: dbias %v, want [%d]", dbias.Shape(), out))
	}
	px, pdy, pdw := d.ptr(op, x, x.Len()), d.ptr(op, dy, dy.Len()), d.ptr(op, dw, dw.Len())
	d.sgemm(op, true, false, out, in, n, 1, pdy, out, px, in, 1, pdw, in)
	if dbias != nil && n > 0 {
		d.launchColSumsAcc(gridPerItem(out), block1D, pdy, d.ptr(op, dbias, out), i32(op, n), i32(op, out))
	}
}

// linearShapes checks x [N, in], w [out, in] and y [N, out] (or their
// gradients) and returns N, in and out.
func linearShapes(op string, x, w, y *tensor.Tensor) (n, in, out int) {
	if x.Rank() != 2 || w.Rank() != 2 || y.Rank() != 2 ||
		x.Dim(1) != w.Dim(1) || y.Dim(0) != x.Dim(0) || y.Dim(1) != w.Dim(0) {
		panic(fmt.Sprintf("cuda: %s: x %v, w %v, y %v: want x [N, in], w [out, in], y [N, out]",
			op, x.Shape(), w.Shape(), y.Shape()))
	}
	return x.Dim(0), x.Dim(1), w.Dim(0)
}
