package tensor

import (
	"fmt"

	ops "github.com/pipecast/pipecast/tensor/internal/transformerops"
)

// The functions of the TransformerKernels family: each runs dev's kernel
// where dev implements TransformerKernels, does nothing on a symbolic
// device without it, and otherwise runs the plain float32 loops of
// package transformerops on host copies of the operands (onHost). The
// loops are the same code the CPU backend shares out over its threads,
// so the fallback computes what the CPU backend computes.

// EmbeddingForward runs TransformerKernels.EmbeddingForward on dev.
func EmbeddingForward(dev Device, ids, table, y *Tensor) {
	if k, ok := dev.(TransformerKernels); ok {
		k.EmbeddingForward(ids, table, y)
		return
	}
	d := embeddingWidth("embedding forward", ids, table, y)
	onHost(dev, []*Tensor{ids, table}, []*Tensor{y}, func(h [][]float32) {
		ops.EmbeddingForward(h[0], h[1], h[2], d)
	})
}

// EmbeddingBackward runs TransformerKernels.EmbeddingBackward on dev.
func EmbeddingBackward(dev Device, ids, dy, dtable *Tensor) {
	if k, ok := dev.(TransformerKernels); ok {
		k.EmbeddingBackward(ids, dy, dtable)
		return
	}
	d := embeddingWidth("embedding backward", ids, dtable, dy)
	onHost(dev, []*Tensor{ids, dy}, []*Tensor{dtable}, func(h [][]float32) {
		ops.EmbeddingBackward(h[0], h[1], h[2], d, 0, d)
	})
}

// LayerNormForward runs TransformerKernels.LayerNormForward on dev.
func LayerNormForward(dev Device, x, gamma, beta, y, mean, rstd *Tensor, eps float32) {
	if k, ok := dev.(TransformerKernels); ok {
		k.LayerNormForward(x, gamma, beta, y, mean, rstd, eps)
		return
	}
	n, d := normRows("layer norm forward", x, gamma, y, mean, rstd)
	onHost(dev, []*Tensor{x, gamma, beta}, []*Tensor{y, mean, rstd}, func(h [][]float32) {
		ops.LayerNormForward(h[0], h[1], h[2], h[3], h[4], h[5], d, eps, 0, n)
	})
}

// LayerNormBackward runs TransformerKernels.LayerNormBackward on dev.
func LayerNormBackward(dev Device, x, dy, gamma, mean, rstd, dx, dgamma, dbeta *Tensor) {
	if k, ok := dev.(TransformerKernels); ok {
		k.LayerNormBackward(x, dy, gamma, mean, rstd, dx, dgamma, dbeta)
		return
	}
	n, d := normRows("layer norm backward", x, gamma, dy, mean, rstd)
	onHost(dev, []*Tensor{x, dy, gamma, mean, rstd}, []*Tensor{dx, dgamma, dbeta}, func(h [][]float32) {
		ops.LayerNormBackward(h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], d, n)
	})
}

// RMSNormForward runs TransformerKernels.RMSNormForward on dev.
func RMSNormForward(dev Device, x, gamma, y, rstd *Tensor, eps float32) {
	if k, ok := dev.(TransformerKernels); ok {
		k.RMSNormForward(x, gamma, y, rstd, eps)
		return
	}
	n, d := normRows("rms norm forward", x, gamma, y, rstd, rstd)
	onHost(dev, []*Tensor{x, gamma}, []*Tensor{y, rstd}, func(h [][]float32) {
		ops.RMSNormForward(h[0], h[1], h[2], h[3], d, eps, 0, n)
	})
}

// RMSNormBackward runs TransformerKernels.RMSNormBackward on dev.
func RMSNormBackward(dev Device, x, dy, gamma, rstd, dx, dgamma *Tensor) {
	if k, ok := dev.(TransformerKernels); ok {
		k.RMSNormBackward(x, dy, gamma, rstd, dx, dgamma)
		return
	}
	n, d := normRows("rms norm backward", x, gamma, dy, rstd, rstd)
	onHost(dev, []*Tensor{x, dy, gamma, rstd}, []*Tensor{dx, dgamma}, func(h [][]float32) {
		ops.RMSNormBackward(h[0], h[1], h[2], h[3], h[4], h[5], d, n)
	})
}

// GELUTanhForward runs TransformerKernels.GELUTanhForward on dev.
func GELUTanhForward(dev Device, x, y *Tensor) {
	if k, ok := dev.(TransformerKernels); ok {
		k.GELUTanhForward(x, y)
		return
	}
	SameShape("gelu forward", x, y)
	onHost(dev, []*Tensor{x}, []*Tensor{y}, func(h [][]float32) { ops.GELUTanhForward(h[0], h[1]) })
}

// GELUTanhBackward runs TransformerKernels.GELUTanhBackward on dev.
func GELUTanhBackward(dev Device, x, dy, dx *Tensor) {
	if k, ok := dev.(TransformerKernels); ok {
		k.GELUTanhBackward(x, dy, dx)
		return
	}
	SameShape("gelu backward", x, dy, dx)
	onHost(dev, []*Tensor{x, dy}, []*Tensor{dx}, func(h [][]float32) { ops.GELUTanhBackward(h[0], h[1], h[2]) })
}

// SwiGLUForward runs TransformerKernels.SwiGLUForward on dev.
func SwiGLUForward(dev Device, gate, up, y *Tensor) {
	if k, ok := dev.(TransformerKernels); ok {
		k.SwiGLUForward(gate, up, y)
		return
	}
	SameShape("swiglu forward", gate, up, y)
	onHost(dev, []*Tensor{gate, up}, []*Tensor{y}, func(h [][]float32) { ops.SwiGLUForward(h[0], h[1], h[2]) })
}

// SwiGLUBackward runs TransformerKernels.SwiGLUBackward on dev.
func SwiGLUBackward(dev Device, gate, up, dy, dgate, dup *Tensor) {
	if k, ok := dev.(TransformerKernels); ok {
		k.SwiGLUBackward(gate, up, dy, dgate, dup)
		return
	}
	SameShape("swiglu backward", gate, up, dy)
	for _, g := range []*Tensor{dgate, dup} {
		if g != nil { // an input gradient not wanted
			SameShape("swiglu backward", gate, g)
		}
	}
	onHost(dev, []*Tensor{gate, up, dy}, []*Tensor{dgate, dup}, func(h [][]float32) {
		ops.SwiGLUBackward(h[0], h[1], h[2], h[3], h[4])
	})
}

// RoPE runs TransformerKernels.RoPE on dev.
func RoPE(dev Device, x, y *Tensor, p RoPEParams) {
	if k, ok := dev.(TransformerKernels); ok {
		k.RoPE(x, y, p)
		return
	}
	b := p.Check("rope", x, y)
	onHost(dev, []*Tensor{x}, []*Tensor{y}, func(h [][]float32) {
		ops.RoPE(h[0], h[1], ops.RoPESizes{Seq: p.Seq, Heads: p.Heads, HeadDim: p.HeadDim, Theta: p.Theta, Inverse: p.Inverse}, 0, b*p.Seq)
	})
}

// AttentionScores runs TransformerKernels.AttentionScores on dev.
func AttentionScores(dev Device, q, k, probs *Tensor, p AttentionParams) {
	if kk, ok := dev.(TransformerKernels); ok {
		kk.AttentionScores(q, k, probs, p)
		return
	}
	b := p.Check("attention scores", q, k, nil, probs)
	onHost(dev, []*Tensor{q, k}, []*Tensor{probs}, func(h [][]float32) {
		ops.AttentionScores(h[0], h[1], h[2], p.sizes(), 0, b*p.Heads)
	})
}

// AttentionContext runs TransformerKernels.AttentionContext on dev.
func AttentionContext(dev Device, probs, v, out *Tensor, p AttentionParams) {
	if k, ok := dev.(TransformerKernels); ok {
		k.AttentionContext(probs, v, out, p)
		return
	}
	b := p.Check("attention context", out, nil, v, probs)
	onHost(dev, []*Tensor{probs, v}, []*Tensor{out}, func(h [][]float32) {
		ops.AttentionContext(h[0], h[1], h[2], p.sizes(), 0, b*p.Heads)
	})
}

// AttentionContextBackward runs TransformerKernels.AttentionContextBackward
// on dev.
func AttentionContextBackward(dev Device, probs, v, dout, dprobs, dv *Tensor, p AttentionParams) {
	if k, ok := dev.(TransformerKernels); ok {
		k.AttentionContextBackward(probs, v, dout, dprobs, dv, p)
		return
	}
	b := p.Check("attention context backward", dout, nil, v, probs)
	p.Check("attention context backward", dout, nil, dv, dprobs)
	onHost(dev, []*Tensor{probs, v, dout}, []*Tensor{dprobs, dv}, func(h [][]float32) {
		ops.AttentionContextBackward(h[0], h[1], h[2], h[3], h[4], p.sizes(), b)
	})
}

// AttentionScoresBackward runs TransformerKernels.AttentionScoresBackward
// on dev.
func AttentionScoresBackward(dev Device, q, k, probs, dprobs, dq, dk *Tensor, p AttentionParams) {
	if kk, ok := dev.(TransformerKernels); ok {
		kk.AttentionScoresBackward(q, k, probs, dprobs, dq, dk, p)
		return
	}
	b := p.Check("attention scores backward", q, k, nil, probs)
	p.Check("attention scores backward", dq, dk, nil, dprobs)
	onHost(dev, []*Tensor{q, k, probs}, []*Tensor{dprobs, dq, dk}, func(h [][]float32) {
		ops.AttentionScoresBackward(h[0], h[1], h[2], h[3], h[4], h[5], p.sizes(), b)
	})
}

// onHost runs fn on host copies of read's and write's tensors, in that
// order (a nil tensor gives a nil slice), and uploads write's copies
// back: the fallback of a kernel family for a device that stores values
// but lacks the family's kernels. Write tensors are downloaded too, as
// accumulating kernels read them. A symbolic device has nothing to
// compute.
func onHost(dev Device, read, write []*Tensor, fn func(host [][]float32)) {
	if IsSymbolic(dev) {
		return
	}
	host := make([][]float32, 0, len(read)+len(write))
	for _, t := range append(append([]*Tensor(nil), read...), write...) {
		if t == nil {
			host = append(host, nil)
			continue
		}
		host = append(host, ToHost(t))
	}
	fn(host)
	for i, t := range write {
		if t != nil {
			dev.Upload(t, host[len(read)+i])
		}
	}
}

// embeddingWidth returns D, the table's row width, after checking that
// rows holds one row of D values for each id.
func embeddingWidth(op string, ids, table, rows *Tensor) int {
	if table.Rank() != 2 || rows.Len() != ids.Len()*table.Dim(1) {
		panic(fmt.Sprintf("tensor: %s: table %v and rows %v for %d ids", op, table.Shape(), rows.Shape(), ids.Len()))
	}
	return table.Dim(1)
}

// normRows returns N and D for a normalisation of x's rows by gamma [D],
// after checking that like has x's shape and each of stats N values.
func normRows(op string, x, gamma, like *Tensor, stats ...*Tensor) (n, d int) {
	d = gamma.Len()
	if d == 0 || x.Len()%d != 0 {
		panic(fmt.Sprintf("tensor: %s: x %v is not rows of gamma's %d", op, x.Shape(), d))
	}
	SameShape(op, x, like)
	n = x.Len() / d
	for _, s := range stats {
		if s.Len() != n {
			panic(fmt.Sprintf("tensor: %s: statistics %v for %d rows", op, s.Shape(), n))
		}
	}
	return n, d
}

// Check panics unless the sizes are consistent and x and y (y may be
// nil) hold the same whole number of sequences of Seq·Heads·HeadDim
// values; it returns that number, B.
func (p RoPEParams) Check(op string, x, y *Tensor) int {
	per := p.Seq * p.Heads * p.HeadDim
	if p.Seq < 1 || p.Heads < 1 || p.HeadDim < 2 || p.HeadDim%2 != 0 || p.Theta <= 0 {
		panic(fmt.Sprintf("tensor: %s: sizes %+v", op, p))
	}
	if x.Len()%per != 0 || (y != nil && y.Len() != x.Len()) {
		panic(fmt.Sprintf("tensor: %s: x %v is not sequences of [%d, %d, %d]", op, x.Shape(), p.Seq, p.Heads, p.HeadDim))
	}
	return x.Len() / per
}

// Check panics unless the sizes are consistent and the given tensors
// (nil ones skipped) hold the same number B of sequences: q-shaped [B,
// S, H, hd], kv-shaped [B, S, Hkv, hd] (the next two arguments) and
// probs-shaped [B, H, S, S]; it returns B.
func (p AttentionParams) Check(op string, q, k, v, probs *Tensor) int {
	if p.Seq < 1 || p.Heads < 1 || p.HeadDim < 1 || p.KVHeads < 1 || p.Heads%p.KVHeads != 0 {
		panic(fmt.Sprintf("tensor: %s: sizes %+v", op, p))
	}
	b := -1
	for _, c := range []struct {
		t   *Tensor
		per int
	}{{q, p.Seq * p.Heads * p.HeadDim}, {k, p.Seq * p.KVHeads * p.HeadDim}, {v, p.Seq * p.KVHeads * p.HeadDim}, {probs, p.Heads * p.Seq * p.Seq}} {
		if c.t == nil {
			continue
		}
		if c.t.Len()%c.per != 0 || (b >= 0 && c.t.Len()/c.per != b) {
			panic(fmt.Sprintf("tensor: %s: %v is not the same sequences of sizes %+v", op, c.t.Shape(), p))
		}
		b = c.t.Len() / c.per
	}
	return b
}

// sizes returns p in the loops' terms.
func (p AttentionParams) sizes() ops.AttentionSizes {
	return ops.AttentionSizes{Seq: p.Seq, Heads: p.Heads, KVHeads: p.KVHeads, HeadDim: p.HeadDim, Scale: p.Scale, Causal: p.Causal}
}
