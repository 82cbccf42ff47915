package meta

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// The device has every kernel of the transformer family (rows here,
// attention in attention.go).
var _ tensor.TransformerKernels = (*Device)(nil)

// The kernels of tensor.TransformerKernels but attention check their
// arguments' shapes, as a backend that computes them would, and do
// nothing else: they are no GEMM-like work, so they count no MACs, and
// the CPU backend's kernels, which a meta device stands in for, hold no
// scratch memory, so they account none.

// EmbeddingForward checks the shapes and does nothing else.
func (d *Device) EmbeddingForward(ids, table, y *tensor.Tensor) {
	embeddingShapes("embedding forward", ids, table, y)
}

// EmbeddingBackward checks the shapes and does nothing else.
func (d *Device) EmbeddingBackward(ids, dy, dtable *tensor.Tensor) {
	embeddingShapes("embedding backward", ids, dtable, dy)
}

// LayerNormForward checks the shapes and does nothing else.
func (d *Device) LayerNormForward(x, gamma, beta, y, mean, rstd *tensor.Tensor, eps float32) {
	const op = "layer norm forward"
	normShapes(op, x, gamma, y, mean, rstd)
	vectorShapes(op, gamma.Len(), beta)
}

// LayerNormBackward checks the shapes and does nothing else.
func (d *Device) LayerNormBackward(x, dy, gamma, mean, rstd, dx, dgamma, dbeta *tensor.Tensor) {
	const op = "layer norm backward"
	normShapes(op, x, gamma, dy, mean, rstd)
	optionalShapes(op, x, dx)
	vectorShapes(op, gamma.Len(), dgamma, dbeta)
}

// RMSNormForward checks the shapes and does nothing else.
func (d *Device) RMSNormForward(x, gamma, y, rstd *tensor.Tensor, eps float32) {
	normShapes("rms norm forward", x, gamma, y, rstd)
}

// RMSNormBackward checks the shapes and does nothing else.
func (d *Device) RMSNormBackward(x, dy, gamma, rstd, dx, dgamma *tensor.Tensor) {
	const op = "rms norm backward"
	normShapes(op, x, gamma, dy, rstd)
	optionalShapes(op, x, dx)
	vectorShapes(op, gamma.Len(), dgamma)
}

// GELUTanhForward checks the shapes and does nothing else.
func (d *Device) GELUTanhForward(x, y *tensor.Tensor) { tensor.SameShape("gelu forward", x, y) }

// GELUTanhBackward checks the shapes and does nothing else.
func (d *Device) GELUTanhBackward(x, dy, dx *tensor.Tensor) {
	tensor.SameShape("gelu backward", x, dy, dx)
}

// SwiGLUForward checks the shapes and does nothing else.
func (d *Device) SwiGLUForward(gate, up, y *tensor.Tensor) {
	tensor.SameShape("swiglu forward", gate, up, y)
}

// SwiGLUBackward checks the shapes and does nothing else; dgate and dup
// may be nil.
func (d *Device) SwiGLUBackward(gate, up, dy, dgate, dup *tensor.Tensor) {
	const op = "swiglu backward"
	tensor.SameShape(op, gate, up, dy)
	optionalShapes(op, gate, dgate, dup)
}

// RoPE checks the shapes and does nothing else.
func (d *Device) RoPE(x, y *tensor.Tensor, p tensor.RoPEParams) { p.Check("rope", x, y) }

// embeddingShapes panics unless table is [V, D] and rows holds one row
// of D values for each id.
func embeddingShapes(op string, ids, table, rows *tensor.Tensor) {
	if table.Rank() != 2 || rows.Len() != ids.Len()*table.Dim(1) {
		panic(fmt.Sprintf("meta: %s: table %v and rows %v for %d ids", op, table.Shape(), rows.Shape(), ids.Len()))
	}
}

// normShapes panics unless x is rows of gamma's length, like has x's
// shape and each of stats holds one value per row.
func normShapes(op string, x, gamma, like *tensor.Tensor, stats ...*tensor.Tensor) {
	dim := gamma.Len()
	if x.Len()%dim != 0 {
		panic(fmt.Sprintf("meta: %s: x %v is not rows of gamma's %d", op, x.Shape(), dim))
	}
	tensor.SameShape(op, x, like)
	for _, s := range stats {
		if s.Len() != x.Len()/dim {
			panic(fmt.Sprintf("meta: %s: statistics %v for %d rows", op, s.Shape(), x.Len()/dim))
		}
	}
}

// vectorShapes panics unless each of ts (nil ones skipped) holds n
// values.
func vectorShapes(op string, n int, ts ...*tensor.Tensor) {
	for _, t := range ts {
		if t != nil && t.Len() != n {
			panic(fmt.Sprintf("meta: %s: %v for %d values", op, t.Shape(), n))
		}
	}
}

// optionalShapes panics unless each of ts (nil ones skipped) has like's
// shape.
func optionalShapes(op string, like *tensor.Tensor, ts ...*tensor.Tensor) {
	for _, t := range ts {
		if t != nil {
			tensor.SameShape(op, like, t)
		}
	}
}
