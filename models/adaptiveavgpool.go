package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// AdaptiveAvgPool2D is torch's nn.AdaptiveAvgPool2d: it averages any
// H×W input into OH×OW cells (1×1 before the classifier of ResNet and
// Inception-v3, 7×7 in VGG).
type AdaptiveAvgPool2D struct {
	OH, OW int
}

// NewAdaptiveAvgPool2D returns an adaptive average pooling to oh×ow.
func NewAdaptiveAvgPool2D(oh, ow int) *AdaptiveAvgPool2D {
	if oh < 1 || ow < 1 {
		panic(fmt.Sprintf("models: adaptiveavgpool2d to %dx%d", oh, ow))
	}
	return &AdaptiveAvgPool2D{OH: oh, OW: ow}
}

// OutShape returns [N, C, OH, OW] for x [N, C, H, W].
func (l *AdaptiveAvgPool2D) OutShape(in tensor.Shape) (tensor.Shape, error) {
	if len(in) != 4 || !in.Valid() {
		return nil, fmt.Errorf("adaptiveavgpool2d: input %v is not [N, C, H, W]", in)
	}
	return tensor.Shape{in[0], in[1], l.OH, l.OW}, nil
}

// Forward averages x into the output cells; the backward needs only x's
// shape.
func (l *AdaptiveAvgPool2D) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	out := mustOutShape("adaptiveavgpool2d", l, x)
	y := p.Dev.Alloc(tensor.Activations, out...)
	p.Dev.AdaptiveAvgPool2DForward(x, y)
	if !p.Grad {
		return y, nil
	}
	return y, &shapeContext{in: x.Shape().Clone()}
}

// Backward spreads each cell's gradient evenly over the inputs it
// averaged.
func (l *AdaptiveAvgPool2D) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	c := ctx.(*shapeContext)
	dx := p.Dev.Alloc(tensor.Activations, c.in...)
	p.Dev.AdaptiveAvgPool2DBackward(dy, dx)
	return dx
}

// Params returns nil.
func (l *AdaptiveAvgPool2D) Params() []*Param { return nil }

// Buffers returns nil.
func (l *AdaptiveAvgPool2D) Buffers() []*Buffer { return nil }

// Children returns nil.
func (l *AdaptiveAvgPool2D) Children() []Child { return nil }
