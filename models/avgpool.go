package models

import "github.com/pipecast/pipecast/tensor"

// AvgPool2D is torch's nn.AvgPool2d with ceil_mode off and
// count_include_pad on (the defaults, which torchvision's Inception-v3
// uses).
type AvgPool2D struct {
	P tensor.Pool2DParams
}

// NewAvgPool2D returns an average pooling; it panics for parameters torch
// rejects.
func NewAvgPool2D(p tensor.Pool2DParams) *AvgPool2D {
	if err := p.Validate(); err != nil {
		panic("models: avgpool2d: " + err.Error())
	}
	return &AvgPool2D{P: p}
}

// OutShape returns [N, C, OH, OW] for x [N, C, H, W].
func (l *AvgPool2D) OutShape(in tensor.Shape) (tensor.Shape, error) {
	return pool2DOutShape("avgpool2d", l.P, in)
}

// Forward returns each window's mean; the backward needs only x's shape.
func (l *AvgPool2D) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	out := mustOutShape("avgpool2d", l, x)
	y := p.Dev.Alloc(tensor.Activations, out...)
	p.Dev.AvgPool2DForward(x, y, l.P)
	if !p.Grad {
		return y, nil
	}
	return y, &shapeContext{in: x.Shape().Clone()}
}

// Backward spreads each window's gradient evenly over it.
func (l *AvgPool2D) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	c := ctx.(*shapeContext)
	dx := p.Dev.Alloc(tensor.Activations, c.in...)
	p.Dev.AvgPool2DBackward(dy, dx, l.P)
	return dx
}

// Params returns nil.
func (l *AvgPool2D) Params() []*Param { return nil }

// Buffers returns nil.
func (l *AvgPool2D) Buffers() []*Buffer { return nil }

// Children returns nil.
func (l *AvgPool2D) Children() []Child { return nil }
