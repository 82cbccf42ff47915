package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// PerToken applies a layer of rows, [N, F] → [N, G] (a Linear, which
// takes 2-D inputs only), to every token of x [m, S, F]: it views x as
// [m·S, F] rows and the result as [m, S, G], as nn.Linear applies to the
// last dimension of any input. Its child has an empty name, so the
// state_dict names are the child's own: Child{"lm_head",
// NewPerToken(linear)} gives lm_head.weight. It splits its backward by
// splitting its child's.
type PerToken struct {
	Layer Layer
}

// NewPerToken returns l applied to every token.
func NewPerToken(l Layer) *PerToken {
	if l == nil {
		panic("models: per-token wrapper without a layer")
	}
	return &PerToken{Layer: l}
}

// OutShape returns [m, S, G] for x [m, S, F] when the layer maps [m·S, F]
// to [m·S, G].
func (l *PerToken) OutShape(in tensor.Shape) (tensor.Shape, error) {
	if len(in) < 2 || !in.Valid() {
		return nil, fmt.Errorf("per token: input %v is not [..., F] rows", in)
	}
	rows, err := l.Layer.OutShape(tensor.Shape{in.Numel() / in[len(in)-1], in[len(in)-1]})
	if err != nil {
		return nil, fmt.Errorf("per token: %w", err)
	}
	if len(rows) != 2 {
		return nil, fmt.Errorf("per token: the layer maps rows to %v, not rows", rows)
	}
	return append(in[:len(in)-1].Clone(), rows[1]), nil
}

// perTokenContext keeps the child's context and x's shape, dx's.
type perTokenContext struct {
	ctx Context
	in  tensor.Shape
}

func (c *perTokenContext) Release() {
	if c.ctx != nil {
		c.ctx.Release()
	}
	c.ctx = nil
}

// Forward runs the layer on the rows of x.
func (l *PerToken) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	out := mustOutShape("per token", l, x)
	rows := asRows(x)
	y, ctx := l.Layer.Forward(rowsPass(p, x, rows), rows)
	rows.Release()
	shaped := y.Reshape(out...)
	y.Release()
	if !p.Grad {
		return shaped, nil
	}
	return shaped, &perTokenContext{ctx: ctx, in: x.Shape().Clone()}
}

// Backward runs the layer's backward on the rows of dy.
func (l *PerToken) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	return l.backward(ctx, dy, combinedBackward(p))
}

// backwardInput is Backward with the child's BackwardInput.
func (l *PerToken) backwardInput(p *Pass, ctx Context, dy *tensor.Tensor) (*tensor.Tensor, WeightGrad) {
	return splitBackward(p, func(child childBackward) *tensor.Tensor { return l.backward(ctx, dy, child) })
}

func (l *PerToken) backward(ctx Context, dy *tensor.Tensor, child childBackward) *tensor.Tensor {
	c := ctx.(*perTokenContext)
	rows := asRows(dy)
	dx := child(l.Layer, c.ctx, rows)
	c.ctx = nil
	rows.Release()
	return reshapeOwned(dx, c.in)
}

// Params returns nil: the parameters are the child's.
func (l *PerToken) Params() []*Param { return nil }

// Buffers returns nil.
func (l *PerToken) Buffers() []*Buffer { return nil }

// Children returns the layer under an empty name.
func (l *PerToken) Children() []Child { return []Child{{Layer: l.Layer}} }

// asRows returns a view of t [..., F] as [N, F].
func asRows(t *tensor.Tensor) *tensor.Tensor {
	f := t.Dim(t.Rank() - 1)
	return t.Reshape(t.Len()/f, f)
}

// reshapeOwned returns a view of t, which the caller owns, with shape s,
// releasing the caller's reference to t; nil stays nil.
func reshapeOwned(t *tensor.Tensor, s tensor.Shape) *tensor.Tensor {
	if t == nil {
		return nil
	}
	v := t.Reshape(s...)
	t.Release()
	return v
}

// rowsPass returns the pass for a child that reads rows, a view of x:
// p itself, or, when x is the input whose gradient no one needs
// (Pass.NoGradInput), a copy that names the view instead, so that the
// child skips that gradient as it would on x.
func rowsPass(p *Pass, x, rows *tensor.Tensor) *Pass {
	if x != p.NoGradInput {
		return p
	}
	q := *p
	q.NoGradInput = rows
	return &q
}
