package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// Dropout is torch's nn.Dropout: in training mode it zeroes each element
// with probability P and scales the rest by 1/(1 − P); in evaluation mode
// it is the identity. Its masks are not drawn from a generator but are a
// pure function of (Pass.Seed, Pass.Step, ID, sample index, element), so
// a sample drops the same units however a mini-batch is split.
type Dropout struct {
	P float32
	// ID distinguishes the model's dropout layers in the mask key; give
	// each one its own.
	ID uint64
}

// NewDropout returns a dropout of probability p with mask key id.
func NewDropout(p float32, id uint64) *Dropout {
	if !(p >= 0 && p < 1) {
		panic(fmt.Sprintf("models: dropout probability %v outside [0, 1)", p))
	}
	return &Dropout{P: p, ID: id}
}

// OutShape returns in.
func (l *Dropout) OutShape(in tensor.Shape) (tensor.Shape, error) {
	if len(in) == 0 || !in.Valid() {
		return nil, fmt.Errorf("dropout: input %v has no samples", in)
	}
	return in.Clone(), nil
}

// dropoutContext keeps only the mask's key, from which the backward
// regenerates the mask; identity marks a forward that dropped nothing.
type dropoutContext struct {
	key      tensor.DropoutKey
	identity bool
}

func (c *dropoutContext) Release() {}

// Forward applies the mask of key {p.Seed, p.Step, ID, p.Sample}. In
// evaluation mode, or with P = 0, y is a view of x.
func (l *Dropout) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	mustOutShape("dropout", l, x)
	if !p.Train || l.P == 0 {
		y := x.Reshape(x.Shape()...)
		if !p.Grad {
			return y, nil
		}
		return y, &dropoutContext{identity: true}
	}
	key := l.key(p)
	y := p.Dev.Alloc(tensor.Activations, x.Shape()...)
	p.Dev.DropoutForward(x, y, l.P, key)
	if !p.Grad {
		return y, nil
	}
	return y, &dropoutContext{key: key}
}

// Backward applies the forward's mask and scale to dy.
func (l *Dropout) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	c := ctx.(*dropoutContext)
	if c.identity {
		return dy.Reshape(dy.Shape()...)
	}
	dx := p.Dev.Alloc(tensor.Activations, dy.Shape()...)
	p.Dev.DropoutBackward(dy, dx, l.P, c.key)
	return dx
}

func (l *Dropout) key(p *Pass) tensor.DropoutKey {
	return tensor.DropoutKey{Seed: p.Seed, Step: p.Step, Layer: l.ID, Sample: p.Sample}
}

// Params returns nil.
func (l *Dropout) Params() []*Param { return nil }

// Buffers returns nil.
func (l *Dropout) Buffers() []*Buffer { return nil }

// Children returns nil.
func (l *Dropout) Children() []Child { return nil }
