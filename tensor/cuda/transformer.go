package cuda

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/pipecast/pipecast/tensor"
	ops "github.com/pipecast/pipecast/tensor/internal/transformerops"
)

// The kernels of tensor.TransformerKernels but attention (attention.go):
// the embedding, the norms, the activations and RoPE, each a kernel of
// kernels/ over the rows (tokens) or elements, computed as package
// transformerops computes them on the CPU (sums and activations in
// double, each output rounded once). None holds memory but the embedding
// backward's index lists (Workspace, released before it returns).

// EmbeddingForward implements tensor.TransformerKernels: y[i, :] =
// table[ids[i], :] (pc_embedding_fwd). The ids are downloaded and
// checked first, which waits for the stream: an id outside the table
// panics, as the contract asks, where the kernel would read past it.
func (d *Device) EmbeddingForward(ids, table, y *tensor.Tensor) {
	const op = "embedding forward"
	dim := embeddingWidth(op, ids, table, y)
	n := ids.Len()
	d.tokenRows(op, ids, table.Dim(0))
	pt, py := d.ptr(op, table, table.Len()), d.ptr(op, y, y.Len())
	d.launchEmbeddingFwd(gridStride(int64(n)*int64(dim)), block1D, PtrOf(ids), pt, py, int64(n), i32(op, dim))
}

// EmbeddingBackward implements tensor.TransformerKernels: dtable[ids[i],
// :] += dy[i, :] (pc_embedding_bwd_acc). The ids are downloaded, checked
// and grouped by token on the host, ascending within each token, and the
// groups uploaded as two int32 lists in a Workspace: the kernel gives
// each (token, column) element one thread, which adds the token's rows in
// order, so a repeated token's rows sum in float32 exactly as the CPU
// loop sums them, deterministically and without atomics.
func (d *Device) EmbeddingBackward(ids, dy, dtable *tensor.Tensor) {
	const op = "embedding backward"
	dim := embeddingWidth(op, ids, dtable, dy)
	rows := d.tokenRows(op, ids, dtable.Dim(0))
	pdy, pdt := d.ptr(op, dy, dy.Len()), d.ptr(op, dtable, dtable.Len())
	n := len(rows)
	if n == 0 || dim == 0 {
		return
	}
	// order: the rows sorted by token, ties by row; starts: where each
	// token's rows begin in order, and n at the end.
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Or(cmp.Compare(rows[a], rows[b]), cmp.Compare(a, b)) })
	lists := append(make([]int32, 0, 2*n+1), order...)
	for i, r := range order {
		if i == 0 || rows[r] != rows[order[i-1]] {
			lists = append(lists, int32(i))
		}
	}
	groups := len(lists) - n
	lists = append(lists, int32(n))
	idx := d.scratch(op, len(lists)) // int32s, one element each
	defer idx.Release()
	pidx := PtrOf(idx)
	d.check(op+": token groups", d.drv.UploadInt32(pidx, lists))
	d.launchEmbeddingBwdAcc(gridStride(int64(groups)*int64(dim)), block1D, PtrOf(ids), pidx, pidx.Add(n), pdy, pdt,
		i32(op, groups), i32(op, dim))
}

// tokenRows downloads ids and returns each one's row of a table of vocab
// rows, panicking (as the CPU backend does) at the first that is not a
// whole number in [0, vocab).
func (d *Device) tokenRows(op string, ids *tensor.Tensor, vocab int) []int {
	host := make([]float32, ids.Len())
	d.Download(host, ids)
	rows := make([]int, len(host))
	for i, id := range host {
		rows[i] = ops.Row(id, vocab)
	}
	if len(rows) > 0 {
		i32(op, len(rows)) // the kernels' int row indices
	}
	return rows
}

// embeddingWidth returns D, the table's row width, after checking that
// rows holds one row of D values for each id.
func embeddingWidth(op string, ids, table, rows *tensor.Tensor) int {
	if table.Rank() != 2 || rows.Len() != ids.Len()*table.Dim(1) {
		panic(fmt.Sprintf("cuda: %s: table %v and rows %v for %d ids", op, table.Shape(), rows.Shape(), ids.Len()))
	}
	return table.Dim(1)
}

// LayerNormForward implements tensor.TransformerKernels
// (pc_layernorm_fwd, one block per row).
func (d *Device) LayerNormForward(x, gamma, beta, y, mean, rstd *tensor.Tensor, eps float32) {
	const op = "layer norm forward"
	n, dim := normRows(op, x, gamma, y, mean, rstd)
	d.launchLayernormFwd(gridPerItem(n), block1D, d.ptr(op, x, x.Len()), d.ptr(op, gamma, dim), d.ptr(op, beta, dim),
		d.ptr(op, y, y.Len()), d.ptr(op, mean, n), d.ptr(op, rstd, n), i32(op, n), i32(op, dim), eps)
}

// LayerNormBackward implements tensor.TransformerKernels: dx by rows
// (pc_layernorm_bwd_data) unless dx is nil, then dgamma and dbeta by
// columns (pc_norm_param_grads_acc), each unless nil.
func (d *Device) LayerNormBackward(x, dy, gamma, mean, rstd, dx, dgamma, dbeta *tensor.Tensor) {
	const op = "layer norm backward"
	n, dim := normRows(op, x, gamma, dy, mean, rstd)
	px, pdy, pm, pr := d.ptr(op, x, x.Len()), d.ptr(op, dy, dy.Len()), d.ptr(op, mean, n), d.ptr(op, rstd, n)
	if dx != nil {
		tensor.SameShape(op, x, dx)
		d.launchLayernormBwdData(gridPerItem(n), block1D, px, pdy, d.ptr(op, gamma, dim), pm, pr, d.ptr(op, dx, dx.Len()),
			i32(op, n), i32(op, dim))
	}
	d.normParamGrads(op, px, pdy, pm, pr, dgamma, dbeta, n, dim)
}

// RMSNormForward implements tensor.TransformerKernels (pc_rmsnorm_fwd,
// one block per row).
func (d *Device) RMSNormForward(x, gamma, y, rstd *tensor.Tensor, eps float32) {
	const op = "rms norm forward"
	n, dim := normRows(op, x, gamma, y, rstd)
	d.launchRmsnormFwd(gridPerItem(n), block1D, d.ptr(op, x, x.Len()), d.ptr(op, gamma, dim), d.ptr(op, y, y.Len()),
		d.ptr(op, rstd, n), i32(op, n), i32(op, dim), eps)
}

// RMSNormBackward implements tensor.TransformerKernels, as
// LayerNormBackward does (pc_rmsnorm_bwd_data, pc_norm_param_grads_acc).
func (d *Device) RMSNormBackward(x, dy, gamma, rstd, dx, dgamma *tensor.Tensor) {
	const op = "rms norm backward"
	n, dim := normRows(op, x, gamma, dy, rstd)
	px, pdy, pr := d.ptr(op, x, x.Len()), d.ptr(op, dy, dy.Len()), d.ptr(op, rstd, n)
	if dx != nil {
		tensor.SameShape(op, x, dx)
		d.launchRmsnormBwdData(gridPerItem(n), block1D, px, pdy, d.ptr(op, gamma, dim), pr, d.ptr(op, dx, dx.Len()),
			i32(op, n), i32(op, dim))
	}
	d.normParamGrads(op, px, pdy, 0, pr, dgamma, nil, n, dim)
}

// normParamGrads accumulates dgamma and dbeta (each unless nil) over the
// n rows, mean 0 for RMSNorm: one block per column.
func (d *Device) normParamGrads(op string, x, dy, mean, rstd Ptr, dgamma, dbeta *tensor.Tensor, n, dim int) {
	if dgamma == nil && dbeta == nil {
		return
	}
	var pg, pb Ptr // NULL: not wanted
	if dgamma != nil {
		pg = d.ptr(op, dgamma, dim)
	}
	if dbeta != nil {
		pb = d.ptr(op, dbeta, dim)
	}
	if n == 0 {
		return
	}
	d.launchNormParamGradsAcc(gridPerItem(dim), block1D, x, dy, mean, rstd, pg, pb, i32(op, n), i32(op, dim))
}

// normRows returns N and D for a normalisation of x's rows by gamma [D],
// after checking that like has x's shape and each of stats N values.
func normRows(op string, x, gamma, like *tensor.Tensor, stats ...*tensor.Tensor) (n, dim int) {
	dim = gamma.Len()
	if dim == 0 || x.Len()%dim != 0 {
		panic(fmt.Sprintf("cuda: %s: x %v is not rows of gamma's %d", op, x.Shape(), dim))
	}
	tensor.SameShape(op, x, like)
	n = x.Len() / dim
	for _, s := range stats {
		if s.Len() != n {
			panic(fmt.Sprintf("cuda: %s: statistics %v for %d rows", op, s.Shape(), n))
		}
	}
	return n, dim
}

// GELUTanhForward implements tensor.TransformerKernels
// (pc_gelu_tanh_fwd).
func (d *Device) GELUTanhForward(x, y *tensor.Tensor) {
	const op = "gelu forward"
	tensor.SameShape(op, x, y)
	n := x.Len()
	d.launchGeluTanhFwd(gridStride(int64(n)), block1D, d.ptr(op, x, n), d.ptr(op, y, n), int64(n))
}

// GELUTanhBackward implements tensor.TransformerKernels
// (pc_gelu_tanh_bwd).
func (d *Device) GELUTanhBackward(x, dy, dx *tensor.Tensor) {
	const op = "gelu backward"
	tensor.SameShape(op, x, dy, dx)
	n := x.Len()
	d.launchGeluTanhBwd(gridStride(int64(n)), block1D, d.ptr(op, x, n), d.ptr(op, dy, n), d.ptr(op, dx, n), int64(n))
}

// SwiGLUForward implements tensor.TransformerKernels (pc_swiglu_fwd).
func (d *Device) SwiGLUForward(gate, up, y *tensor.Tensor) {
	const op = "swiglu forward"
	tensor.SameShape(op, gate, up, y)
	n := gate.Len()
	d.launchSwigluFwd(gridStride(int64(n)), block1D, d.ptr(op, gate, n), d.ptr(op, up, n), d.ptr(op, y, n), int64(n))
}

// SwiGLUBackward implements tensor.TransformerKernels (pc_swiglu_bwd); a
// nil dgate or dup is not computed.
func (d *Device) SwiGLUBackward(gate, up, dy, dgate, dup *tensor.Tensor) {
	const op = "swiglu backward"
	tensor.SameShape(op, gate, up, dy)
	n := gate.Len()
	var pg, pu Ptr // NULL: not wanted
	if dgate != nil {
		tensor.SameShape(op, gate, dgate)
		pg = d.ptr(op, dgate, n)
	}
	if dup != nil {
		tensor.SameShape(op, gate, dup)
		pu = d.ptr(op, dup, n)
	}
	if dgate == nil && dup == nil {
		return
	}
	d.launchSwigluBwd(gridStride(int64(n)), block1D, d.ptr(op, gate, n), d.ptr(op, up, n), d.ptr(op, dy, n), pg, pu, int64(n))
}

// RoPE implements tensor.TransformerKernels (pc_rope, one thread per
// rotated pair, the angles in double from p.Theta as a double).
func (d *Device) RoPE(x, y *tensor.Tensor, p tensor.RoPEParams) {
	const op = "rope"
	b := p.Check(op, x, y)
	rows := int64(b) * int64(p.Seq)
	d.launchRope(gridStride(rows*int64(p.Heads)*int64(p.HeadDim/2)), block1D, d.ptr(op, x, x.Len()), d.ptr(op, y, y.Len()),
		rows, i32(op, p.Seq), i32(op, p.Heads), i32(op, p.HeadDim), p.Theta, flag(p.Inverse))
}
