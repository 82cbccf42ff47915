package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// GELUTanh is GPT-2's activation, "gelu_new" (Hugging Face's
// NewGELUActivation): ½x(1 + tanh(√(2/π)(x + 0.044715x³))), the tanh
// approximation of Hendrycks and Gimpel, "Gaussian Error Linear Units",
// 2016, §2.
type GELUTanh struct{}

// NewGELUTanh returns the activation.
func NewGELUTanh() *GELUTanh { return &GELUTanh{} }

// OutShape returns in.
func (l *GELUTanh) OutShape(in tensor.Shape) (tensor.Shape, error) {
	if len(in) == 0 || !in.Valid() {
		return nil, fmt.Errorf("gelu: input %v has no elements", in)
	}
	return in.Clone(), nil
}

// geluContext keeps x, which the derivative needs (unlike ReLU's, it
// cannot be read from y).
type geluContext struct{ x *tensor.Tensor }

func (c *geluContext) Release() { c.x.Release(); c.x = nil }

// Forward applies the activation elementwise.
func (l *GELUTanh) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	mustOutShape("gelu", l, x)
	y := p.Dev.Alloc(tensor.Activations, x.Shape()...)
	tensor.GELUTanhForward(p.Dev, x, y)
	if !p.Grad {
		return y, nil
	}
	return y, &geluContext{x: x.Retain()}
}

// Backward returns dy·gelu′(x).
func (l *GELUTanh) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	c := ctx.(*geluContext)
	defer c.Release()
	dx := p.Dev.Alloc(tensor.Activations, c.x.Shape()...)
	tensor.GELUTanhBackward(p.Dev, c.x, dy, dx)
	return dx
}

// Params returns nil.
func (l *GELUTanh) Params() []*Param { return nil }

// Buffers returns nil.
func (l *GELUTanh) Buffers() []*Buffer { return nil }

// Children returns nil.
func (l *GELUTanh) Children() []Child { return nil }
