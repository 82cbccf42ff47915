package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// GatedMLP is Llama's LlamaMLP, down(silu(gate(x))·up(x)) on every token
// of x [m, S, D] (Shazeer, "GLU Variants Improve Transformer", 2020,
// §2): gate_proj and up_proj D → Intermediate, down_proj back to D.
//
// A training forward keeps, besides its input x (which gate's and up's
// contexts hold), gate(x), up(x) and their product (down's input): 3·N·
// Intermediate float32 values for N = m·S tokens. PyTorch's eager
// LlamaMLP keeps those and silu(gate(x)) besides.
type GatedMLP struct {
	Gate, Up, Down *Linear
}

// NewLlamaMLP returns Llama's MLP sized by cfg, weights N(0, InitStd²).
func NewLlamaMLP(b *Builder, cfg DecoderConfig) *GatedMLP {
	cfg.mustCheck()
	return &GatedMLP{
		Gate: decoderLinear(b, cfg.Hidden, cfg.Intermediate, cfg.Bias, cfg.InitStd),
		Up:   decoderLinear(b, cfg.Hidden, cfg.Intermediate, cfg.Bias, cfg.InitStd),
		Down: decoderLinear(b, cfg.Intermediate, cfg.Hidden, cfg.Bias, cfg.InitStd),
	}
}

// OutShape returns in for x [m, S, D].
func (l *GatedMLP) OutShape(in tensor.Shape) (tensor.Shape, error) {
	if len(in) != 3 || !in.Valid() || in[2] != l.Gate.In {
		return nil, fmt.Errorf("gated mlp(%d→%d): input %v is not [m, S, %d]", l.Gate.In, l.Gate.Out, in, l.Gate.In)
	}
	return in.Clone(), nil
}

// gatedMLPContext keeps the projections' contexts and the gate's and
// up's outputs, which SwiGLU's backward reads.
type gatedMLPContext struct {
	gate, up, down Context
	g, u           *tensor.Tensor
}

func (c *gatedMLPContext) Release() {
	for _, ctx := range []Context{c.gate, c.up, c.down} {
		if ctx != nil {
			ctx.Release()
		}
	}
	c.g.Release()
	c.u.Release()
	*c = gatedMLPContext{}
}

// Forward computes down(silu(gate(x))·up(x)).
func (l *GatedMLP) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	mustOutShape("gated mlp", l, x)
	rows := asRows(x)
	rp := rowsPass(p, x, rows)
	g, gateCtx := l.Gate.Forward(rp, rows)
	u, upCtx := l.Up.Forward(rp, rows)
	rows.Release()
	h := p.Dev.Alloc(tensor.Activations, g.Shape()...)
	tensor.SwiGLUForward(p.Dev, g, u, h)
	if !p.Grad {
		release(&g, &u)
	}
	y, downCtx := l.Down.Forward(p, h)
	h.Release()
	y = reshapeOwned(y, x.Shape())
	if !p.Grad {
		return y, nil
	}
	return y, &gatedMLPContext{gate: gateCtx, up: upCtx, down: downCtx, g: g, u: u}
}

// Backward returns dx and accumulates the projections' gradients.
func (l *GatedMLP) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	return l.backward(p, ctx, dy, combinedBackward(p))
}

// backwardInput is Backward with the projections' BackwardInput.
func (l *GatedMLP) backwardInput(p *Pass, ctx Context, dy *tensor.Tensor) (*tensor.Tensor, WeightGrad) {
	return splitBackward(p, func(child childBackward) *tensor.Tensor { return l.backward(p, ctx, dy, child) })
}

func (l *GatedMLP) backward(p *Pass, ctx Context, dy *tensor.Tensor, child childBackward) *tensor.Tensor {
	c := ctx.(*gatedMLPContext)
	defer c.Release()
	rows := asRows(dy)
	dh := child(l.Down, c.down, rows)
	c.down = nil
	rows.Release()
	dg := p.Dev.Alloc(tensor.Activations, dh.Shape()...)
	du := p.Dev.Alloc(tensor.Activations, dh.Shape()...)
	tensor.SwiGLUBackward(p.Dev, c.g, c.u, dh, dg, du)
	dh.Release()
	release(&c.g, &c.u)
	dx := child(l.Gate, c.gate, dg)
	c.gate = nil
	dg.Release()
	dxu := child(l.Up, c.up, du)
	c.up = nil
	du.Release()
	dx = addOwned(p.Dev, dx, dxu)
	dxu.Release()
	return reshapeOwned(dx, dy.Shape())
}

// Params returns nil: the parameters are the projections'.
func (l *GatedMLP) Params() []*Param { return nil }

// Buffers returns nil.
func (l *GatedMLP) Buffers() []*Buffer { return nil }

// Children returns gate_proj, up_proj and down_proj.
func (l *GatedMLP) Children() []Child {
	return []Child{{"gate_proj", l.Gate}, {"up_proj", l.Up}, {"down_proj", l.Down}}
}
