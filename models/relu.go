package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// ReLU is torch's nn.ReLU, max(x, 0), computed out of place: x is only
// borrowed, and a residual block may still need it.
type ReLU struct{}

// NewReLU returns a ReLU.
func NewReLU() *ReLU { return &ReLU{} }

// OutShape returns in.
func (l *ReLU) OutShape(in tensor.Shape) (tensor.Shape, error) {
	if len(in) == 0 || !in.Valid() {
		return nil, fmt.Errorf("relu: input %v has no elements", in)
	}
	return in.Clone(), nil
}

// reluContext keeps y rather than x: y > 0 exactly where x > 0, and y is
// often kept anyway as the next layer's input.
type reluContext struct{ y *tensor.Tensor }

func (c *reluContext) Release() { c.y.Release(); c.y = nil }

// Forward returns max(x, 0).
func (l *ReLU) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	mustOutShape("relu", l, x)
	y := p.Dev.Alloc(tensor.Activations, x.Shape()...)
	p.Dev.ReLUForward(x, y)
	if !p.Grad {
		return y, nil
	}
	return y, &reluContext{y: y.Retain()}
}

// Backward returns dy where y > 0, else 0.
func (l *ReLU) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	c := ctx.(*reluContext)
	defer c.Release()
	dx := p.Dev.Alloc(tensor.Activations, c.y.Shape()...)
	p.Dev.ReLUBackward(c.y, dy, dx)
	return dx
}

// Params returns nil.
func (l *ReLU) Params() []*Param { return nil }

// Buffers returns nil.
func (l *ReLU) Buffers() []*Buffer { return nil }

// Children returns nil.
func (l *ReLU) Children() []Child { return nil }
