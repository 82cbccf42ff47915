package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// Flatten is torch.flatten(x, 1): it keeps the batch dimension and joins
// the others, [N, C, H, W] → [N, C·H·W]. Its output is a view of x, so it
// costs no memory and no copy.
type Flatten struct{}

// NewFlatten returns a Flatten.
func NewFlatten() *Flatten { return &Flatten{} }

// OutShape returns [N, product of the other dimensions].
func (l *Flatten) OutShape(in tensor.Shape) (tensor.Shape, error) {
	if len(in) < 1 || !in.Valid() {
		return nil, fmt.Errorf("flatten: input %v has no samples", in)
	}
	return tensor.Shape{in[0], tensor.Shape(in[1:]).Numel()}, nil
}

// Forward returns a view of x of the flattened shape.
func (l *Flatten) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	y := x.Reshape(mustOutShape("flatten", l, x)...)
	if !p.Grad {
		return y, nil
	}
	return y, &shapeContext{in: x.Shape().Clone()}
}

// Backward returns a view of dy of the input's shape.
func (l *Flatten) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	return dy.Reshape(ctx.(*shapeContext).in...)
}

// Params returns nil.
func (l *Flatten) Params() []*Param { return nil }

// Buffers returns nil.
func (l *Flatten) Buffers() []*Buffer { return nil }

// Children returns nil.
func (l *Flatten) Children() []Child { return nil }
