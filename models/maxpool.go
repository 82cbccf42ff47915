package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// MaxPool2D is torch's nn.MaxPool2d with dilation 1 and ceil_mode off.
type MaxPool2D struct {
	P tensor.Pool2DParams
}

// NewMaxPool2D returns a max pooling; it panics for parameters torch
// rejects.
func NewMaxPool2D(p tensor.Pool2DParams) *MaxPool2D {
	if err := p.Validate(); err != nil {
		panic("models: maxpool2d: " + err.Error())
	}
	return &MaxPool2D{P: p}
}

// OutShape returns [N, C, OH, OW] for x [N, C, H, W].
func (l *MaxPool2D) OutShape(in tensor.Shape) (tensor.Shape, error) {
	return pool2DOutShape("maxpool2d", l.P, in)
}

type maxPoolContext struct{ x *tensor.Tensor }

func (c *maxPoolContext) Release() { c.x.Release(); c.x = nil }

// Forward returns each window's maximum; the context keeps x, from which
// the backward finds where each maximum was.
func (l *MaxPool2D) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	out := mustOutShape("maxpool2d", l, x)
	y := p.Dev.Alloc(tensor.Activations, out...)
	p.Dev.MaxPool2DForward(x, y, l.P)
	if !p.Grad {
		return y, nil
	}
	return y, &maxPoolContext{x: x.Retain()}
}

// Backward routes each window's gradient to its maximum.
func (l *MaxPool2D) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	c := ctx.(*maxPoolContext)
	defer c.Release()
	dx := p.Dev.Alloc(tensor.Activations, c.x.Shape()...)
	p.Dev.MaxPool2DBackward(c.x, dy, dx, l.P)
	return dx
}

// Params returns nil.
func (l *MaxPool2D) Params() []*Param { return nil }

// Buffers returns nil.
func (l *MaxPool2D) Buffers() []*Buffer { return nil }

// Children returns nil.
func (l *MaxPool2D) Children() []Child { return nil }

// pool2DOutShape is the output shape of a pooling with parameters p, or
// why an input of shape in cannot be pooled.
func pool2DOutShape(op string, p tensor.Pool2DParams, in tensor.Shape) (tensor.Shape, error) {
	if len(in) != 4 || !in.Valid() {
		return nil, fmt.Errorf("%s: input %v is not [N, C, H, W]", op, in)
	}
	// Checked before OutSize, whose integer division truncates a
	// negative numerator towards zero.
	if in[2]+2*p.PadH < p.KH || in[3]+2*p.PadW < p.KW {
		return nil, fmt.Errorf("%s %dx%d with padding %dx%d: input %dx%d is smaller than the window",
			op, p.KH, p.KW, p.PadH, p.PadW, in[2], in[3])
	}
	oh, ow := p.OutSize(in[2], in[3])
	return tensor.Shape{in[0], in[1], oh, ow}, nil
}

// shapeContext keeps only the input's shape, for layers whose backward
// needs nothing else (average poolings, flatten).
type shapeContext struct{ in tensor.Shape }

func (c *shapeContext) Release() {}
