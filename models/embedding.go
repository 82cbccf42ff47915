package models

import (
	"fmt"
	"math/rand/v2"

	"github.com/pipecast/pipecast/tensor"
)

// Embedding is torch's nn.Embedding: a table, parameter "weight" [Vocab,
// Dim], whose rows the token ids select. Its input is a micro-batch of
// token ids [m, S], whole numbers held as float32; its output [m, S,
// Dim]. Ids have no gradient: the backward returns a nil dx, as a first
// stage's input needs none. The weight may be shared with another layer
// (GPT-2's lm_head, tied to wte): both accumulate into its one Grad.
type Embedding struct {
	Vocab, Dim int
	Weight     *Param
}

// NewEmbedding returns an embedding of vocab rows of dim values on dev,
// initialised as torch's default: N(0, 1).
func NewEmbedding(dev tensor.Device, vocab, dim int, rng *rand.Rand) *Embedding {
	if vocab < 1 || dim < 1 {
		panic(fmt.Sprintf("models: embedding of %d rows of %d", vocab, dim))
	}
	l := &Embedding{Vocab: vocab, Dim: dim, Weight: &Param{Name: "weight", Value: dev.Alloc(tensor.Weights, vocab, dim)}}
	Normal(dev, l.Weight.Value, 0, 1, rng)
	return l
}

// OutShape returns [m, S, Dim] for ids [m, S].
func (l *Embedding) OutShape(in tensor.Shape) (tensor.Shape, error) {
	if len(in) != 2 || !in.Valid() {
		return nil, fmt.Errorf("embedding %d×%d: input %v is not token ids [m, S]", l.Vocab, l.Dim, in)
	}
	return tensor.Shape{in[0], in[1], l.Dim}, nil
}

// embeddingContext keeps the ids, which the weight gradient scatters by.
type embeddingContext struct{ ids *tensor.Tensor }

func (c *embeddingContext) Release() { c.ids.Release(); c.ids = nil }

// Forward selects the table's row of every id. An id outside [0, Vocab)
// panics (the kernel's check).
func (l *Embedding) Forward(p *Pass, ids *tensor.Tensor) (*tensor.Tensor, Context) {
	out := mustOutShape("embedding", l, ids)
	y := p.Dev.Alloc(tensor.Activations, out...)
	tensor.EmbeddingForward(p.Dev, ids, l.Weight.Value, y)
	if !p.Grad {
		return y, nil
	}
	return y, &embeddingContext{ids: ids.Retain()}
}

// Backward accumulates the weight gradient, dy scattered by token, and
// returns nil: ids have no gradient.
func (l *Embedding) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	dx, w := l.backwardInput(p, ctx, dy)
	w.Run(p)
	return dx
}

// backwardInput returns nil and defers the whole of the backward, the
// weight gradient, which needs the ids and dy.
func (l *Embedding) backwardInput(_ *Pass, ctx Context, dy *tensor.Tensor) (*tensor.Tensor, WeightGrad) {
	c := ctx.(*embeddingContext)
	ids := c.ids
	c.ids = nil // moved into the work
	return nil, deferParams(l, ids, dy)
}

// paramsBackward accumulates dy's rows into the rows of the weight
// gradient the ids select.
func (l *Embedding) paramsBackward(p *Pass, ids, dy *tensor.Tensor) {
	tensor.EmbeddingBackward(p.Dev, ids, dy, l.Weight.GradFor(p.Dev))
}

// Params returns weight.
func (l *Embedding) Params() []*Param { return []*Param{l.Weight} }

// Buffers returns nil.
func (l *Embedding) Buffers() []*Buffer { return nil }

// Children returns nil.
func (l *Embedding) Children() []Child { return nil }

// PositionEmbedding adds GPT-2's learned absolute positions to a
// micro-batch of token embeddings: parameter "weight" [Positions, Dim]
// (wpe), and y[b, s] = x[b, s] + weight[s] for positions s = 0 … S−1 of
// every sequence b, as GPT2Model adds wpe(arange(S)). It keeps nothing
// for its backward: dx is dy, and the weight gradient's rows 0 … S−1
// gather dy summed over the sequences.
type PositionEmbedding struct {
	Positions, Dim int
	Weight         *Param
}

// NewPositionEmbedding returns a table of positions rows of dim values on
// dev, initialised as torch's nn.Embedding: N(0, 1).
func NewPositionEmbedding(dev tensor.Device, positions, dim int, rng *rand.Rand) *PositionEmbedding {
	if positions < 1 || dim < 1 {
		panic(fmt.Sprintf("models: position embedding of %d rows of %d", positions, dim))
	}
	l := &PositionEmbedding{Positions: positions, Dim: dim, Weight: &Param{Name: "weight", Value: dev.Alloc(tensor.Weights, positions, dim)}}
	Normal(dev, l.Weight.Value, 0, 1, rng)
	return l
}

// OutShape returns in for x [m, S, Dim] with S at most Positions.
func (l *PositionEmbedding) OutShape(in tensor.Shape) (tensor.Shape, error) {
	if len(in) != 3 || !in.Valid() || in[2] != l.Dim {
		return nil, fmt.Errorf("position embedding %d×%d: input %v is not [m, S, %d]", l.Positions, l.Dim, in, l.Dim)
	}
	if in[1] > l.Positions {
		return nil, fmt.Errorf("position embedding: sequence of %d tokens is longer than the %d positions it has", in[1], l.Positions)
	}
	return in.Clone(), nil
}

// positionContext marks a forward that Backward may follow; it keeps
// nothing.
type positionContext struct{}

func (positionContext) Release() {}

// Forward adds the first S rows of the table to each sequence.
func (l *PositionEmbedding) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	mustOutShape("position embedding", l, x)
	y := p.Dev.Alloc(tensor.Activations, x.Shape()...)
	table := l.Weight.Value.Slice(0, x.Dim(1))
	defer table.Release()
	for b := range x.Dim(0) {
		yb, xb := sequence(y, b), sequence(x, b)
		p.Dev.Add(yb, xb, table)
		yb.Release()
		xb.Release()
	}
	if !p.Grad {
		return y, nil
	}
	return y, positionContext{}
}

// Backward returns dy (a view) and accumulates the weight gradient.
func (l *PositionEmbedding) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	dx, w := l.backwardInput(p, ctx, dy)
	w.Run(p)
	return dx
}

// backwardInput returns dy as dx, a view, and defers the weight
// gradient, which needs dy alone. The work's reference to dy keeps a
// caller from summing into the view in place.
func (l *PositionEmbedding) backwardInput(_ *Pass, _ Context, dy *tensor.Tensor) (*tensor.Tensor, WeightGrad) {
	return dy.Reshape(dy.Shape()...), deferParams(l, nil, dy)
}

// paramsBackward adds every sequence of dy into rows 0 … S−1 of the
// weight gradient, sequence after sequence.
func (l *PositionEmbedding) paramsBackward(p *Pass, _, dy *tensor.Tensor) {
	g := l.Weight.GradFor(p.Dev).Slice(0, dy.Dim(1))
	defer g.Release()
	for b := range dy.Dim(0) {
		db := sequence(dy, b)
		p.Dev.Add(g, g, db)
		db.Release()
	}
}

// Params returns weight.
func (l *PositionEmbedding) Params() []*Param { return []*Param{l.Weight} }

// Buffers returns nil.
func (l *PositionEmbedding) Buffers() []*Buffer { return nil }

// Children returns nil.
func (l *PositionEmbedding) Children() []Child { return nil }

// sequence returns sequence b of t [m, S, D] as a view [S, D].
func sequence(t *tensor.Tensor, b int) *tensor.Tensor {
	s := t.Slice(b, b+1)
	defer s.Release()
	return s.Reshape(t.Shape()[1:]...)
}
