package cpu

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
	ops "github.com/pipecast/pipecast/tensor/internal/transformerops"
)

// The device has every kernel of the transformer family (rows here,
// attention in attention.go).
var _ tensor.TransformerKernels = (*Device)(nil)

// The kernels of tensor.TransformerKernels but attention: the loops of
// package transformerops, which the host fallback runs whole, shared out
// over the pool. Rows (tokens) go to threads where each row's outputs
// are its own; the sums over rows (the embedding's and the norms'
// parameter gradients) go out by columns instead, so that no thread
// needs partial sums of its own and every sum adds its rows in one order.
// The kernels hold no scratch memory, so a meta device accounts none for
// them, and they compute the fallback's bits at any thread count.

// activationGrain is the fewest values of an activation worth handing to
// another thread: each costs a float64 tanh or exp, some 20 ns, where a
// copy's value costs well under one, so a sixteenth of elementGrain's
// values are about as much work.
const activationGrain = elementGrain / 16

// columnGroup is the width, in values, of the column ranges the sums over
// rows are shared out in: a 64-byte cache line, so that two threads write
// one line of a gradient only where a range ends inside it.
const columnGroup = 16

// EmbeddingForward implements tensor.TransformerKernels: y[i, :] =
// table[ids[i], :]. Every id is checked before any row is copied.
func (d *Device) EmbeddingForward(ids, table, y *tensor.Tensor) {
	const op = "embedding forward"
	dim := d.embeddingWidth(op, ids, table, y)
	is, ts, ys := Data(ids), Data(table), Data(y)
	ops.CheckIDs(is, table.Dim(0))
	d.pool.parallel(len(is), max(1, elementGrain/dim), func(lo, hi int) {
		ops.EmbeddingForward(is[lo:hi], ts, ys[lo*dim:hi*dim], dim)
	})
}

// EmbeddingBackward implements tensor.TransformerKernels: dtable[ids[i],
// :] += dy[i, :], shared out by columns so that a repeated token's rows
// are summed by one thread.
func (d *Device) EmbeddingBackward(ids, dy, dtable *tensor.Tensor) {
	const op = "embedding backward"
	dim := d.embeddingWidth(op, ids, dtable, dy)
	is, gs, ts := Data(ids), Data(dy), Data(dtable)
	ops.CheckIDs(is, dtable.Dim(0))
	d.byColumns(dim, len(is), func(lo, hi int) { ops.EmbeddingBackward(is, gs, ts, dim, lo, hi) })
}

// LayerNormForward implements tensor.TransformerKernels.
func (d *Device) LayerNormForward(x, gamma, beta, y, mean, rstd *tensor.Tensor, eps float32) {
	const op = "layer norm forward"
	n, dim := d.normRows(op, x, gamma, y, mean, rstd)
	xs, gs, bs, ys := Data(x), Data(gamma), d.data(op, beta, dim), Data(y)
	ms, rs := Data(mean), Data(rstd)
	d.pool.parallel(n, max(1, elementGrain/dim), func(lo, hi int) {
		ops.LayerNormForward(xs, gs, bs, ys, ms, rs, dim, eps, lo, hi)
	})
}

// LayerNormBackward implements tensor.TransformerKernels: dx by rows,
// then dgamma and dbeta by columns, which reads x and dy twice but holds
// no per-thread partial sums.
func (d *Device) LayerNormBackward(x, dy, gamma, mean, rstd, dx, dgamma, dbeta *tensor.Tensor) {
	const op = "layer norm backward"
	n, dim := d.normRows(op, x, gamma, dy, mean, rstd)
	xs, gys, gs, ms, rs := Data(x), Data(dy), Data(gamma), Data(mean), Data(rstd)
	if dx != nil {
		dxs := d.sameAs(op, x, dx)
		d.pool.parallel(n, max(1, elementGrain/dim), func(lo, hi int) {
			ops.LayerNormInputGrad(xs, gys, gs, ms, rs, dxs, dim, lo, hi)
		})
	}
	dgs, dbs := d.optional(op, dgamma, dim), d.optional(op, dbeta, dim)
	d.byColumns(dim, n, func(lo, hi int) { ops.NormParamGrads(xs, gys, ms, rs, dgs, dbs, dim, n, lo, hi) })
}

// RMSNormForward implements tensor.TransformerKernels.
func (d *Device) RMSNormForward(x, gamma, y, rstd *tensor.Tensor, eps float32) {
	const op = "rms norm forward"
	n, dim := d.normRows(op, x, gamma, y, rstd)
	xs, gs, ys, rs := Data(x), Data(gamma), Data(y), Data(rstd)
	d.pool.parallel(n, max(1, elementGrain/dim), func(lo, hi int) {
		ops.RMSNormForward(xs, gs, ys, rs, dim, eps, lo, hi)
	})
}

// RMSNormBackward implements tensor.TransformerKernels, as
// LayerNormBackward does.
func (d *Device) RMSNormBackward(x, dy, gamma, rstd, dx, dgamma *tensor.Tensor) {
	const op = "rms norm backward"
	n, dim := d.normRows(op, x, gamma, dy, rstd)
	xs, gys, gs, rs := Data(x), Data(dy), Data(gamma), Data(rstd)
	if dx != nil {
		dxs := d.sameAs(op, x, dx)
		d.pool.parallel(n, max(1, elementGrain/dim), func(lo, hi int) {
			ops.RMSNormInputGrad(xs, gys, gs, rs, dxs, dim, lo, hi)
		})
	}
	dgs := d.optional(op, dgamma, dim)
	d.byColumns(dim, n, func(lo, hi int) { ops.NormParamGrads(xs, gys, nil, rs, dgs, nil, dim, n, lo, hi) })
}

// GELUTanhForward implements tensor.TransformerKernels.
func (d *Device) GELUTanhForward(x, y *tensor.Tensor) {
	const op = "gelu forward"
	d.mustOwn(op, x)
	xs, ys := Data(x), d.sameAs(op, x, y)
	d.pool.parallel(len(xs), activationGrain, func(lo, hi int) { ops.GELUTanhForward(xs[lo:hi], ys[lo:hi]) })
}

// GELUTanhBackward implements tensor.TransformerKernels.
func (d *Device) GELUTanhBackward(x, dy, dx *tensor.Tensor) {
	const op = "gelu backward"
	d.mustOwn(op, x)
	xs, gs, dxs := Data(x), d.sameAs(op, x, dy), d.sameAs(op, x, dx)
	d.pool.parallel(len(xs), activationGrain, func(lo, hi int) {
		ops.GELUTanhBackward(xs[lo:hi], gs[lo:hi], dxs[lo:hi])
	})
}

// SwiGLUForward implements tensor.TransformerKernels.
func (d *Device) SwiGLUForward(gate, up, y *tensor.Tensor) {
	const op = "swiglu forward"
	d.mustOwn(op, gate)
	gs, us, ys := Data(gate), d.sameAs(op, gate, up), d.sameAs(op, gate, y)
	d.pool.parallel(len(gs), activationGrain, func(lo, hi int) { ops.SwiGLUForward(gs[lo:hi], us[lo:hi], ys[lo:hi]) })
}

// SwiGLUBackward implements tensor.TransformerKernels; a nil dgate or
// dup is not computed.
func (d *Device) SwiGLUBackward(gate, up, dy, dgate, dup *tensor.Tensor) {
	const op = "swiglu backward"
	d.mustOwn(op, gate)
	gs, us, gys := Data(gate), d.sameAs(op, gate, up), d.sameAs(op, gate, dy)
	var dgs, dus []float32
	if dgate != nil {
		dgs = d.sameAs(op, gate, dgate)
	}
	if dup != nil {
		dus = d.sameAs(op, gate, dup)
	}
	d.pool.parallel(len(gs), activationGrain, func(lo, hi int) {
		ops.SwiGLUBackward(gs[lo:hi], us[lo:hi], gys[lo:hi], sub(dgs, lo, hi), sub(dus, lo, hi))
	})
}

// RoPE implements tensor.TransformerKernels, sharing out tokens (rows of
// Heads·HeadDim values); y may be x.
func (d *Device) RoPE(x, y *tensor.Tensor, p tensor.RoPEParams) {
	const op = "rope"
	b := p.Check(op, x, y)
	d.mustOwn(op, x)
	xs, ys := Data(x), d.sameAs(op, x, y)
	sizes := ops.RoPESizes{Seq: p.Seq, Heads: p.Heads, HeadDim: p.HeadDim, Theta: p.Theta, Inverse: p.Inverse}
	d.pool.parallel(b*p.Seq, max(1, elementGrain/(p.Heads*p.HeadDim)), func(lo, hi int) {
		ops.RoPE(xs, ys, sizes, lo, hi)
	})
}

// byColumns calls fn on ranges of columns [lo, hi) covering [0, dim),
// shared out in whole columnGroups, each column's work being n values.
func (d *Device) byColumns(dim, n int, fn func(lo, hi int)) {
	groups := (dim + columnGroup - 1) / columnGroup
	d.pool.parallel(groups, max(1, elementGrain/(columnGroup*n)), func(lo, hi int) {
		fn(lo*columnGroup, min(hi*columnGroup, dim))
	})
}

// embeddingWidth returns the table's row width after checking that every
// tensor lives on d and that rows holds one row of it per id.
func (d *Device) embeddingWidth(op string, ids, table, rows *tensor.Tensor) int {
	for _, t := range []*tensor.Tensor{ids, table, rows} {
		d.mustOwn(op, t)
	}
	if table.Rank() != 2 || rows.Len() != ids.Len()*table.Dim(1) {
		panic(fmt.Sprintf("cpu: %s: table %v and rows %v for %d ids", op, table.Shape(), rows.Shape(), ids.Len()))
	}
	return table.Dim(1)
}

// normRows returns N and D for a normalisation of x's rows by gamma [D],
// after checking that every tensor lives on d, that like has x's shape
// and that each of stats holds N values.
func (d *Device) normRows(op string, x, gamma, like *tensor.Tensor, stats ...*tensor.Tensor) (n, dim int) {
	d.mustOwn(op, x)
	d.mustOwn(op, gamma)
	dim = gamma.Len()
	if dim == 0 || x.Len()%dim != 0 {
		panic(fmt.Sprintf("cpu: %s: x %v is not rows of gamma's %d", op, x.Shape(), dim))
	}
	d.sameAs(op, x, like)
	n = x.Len() / dim
	for _, s := range stats {
		d.data(op, s, n)
	}
	return n, dim
}

// sameAs returns t's values after checking that t lives on d and has
// like's shape.
func (d *Device) sameAs(op string, like, t *tensor.Tensor) []float32 {
	mustAgree(op, like, t)
	return d.data(op, t, like.Len())
}

// optional returns t's n values, or nil for a nil t.
func (d *Device) optional(op string, t *tensor.Tensor, n int) []float32 {
	if t == nil {
		return nil
	}
	return d.data(op, t, n)
}
