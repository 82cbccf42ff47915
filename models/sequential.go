package models

import (
	"fmt"
	"strconv"

	"github.com/pipecast/pipecast/tensor"
)

// Sequential is torch's nn.Sequential: its children applied in order.
// With an empty name, as a child of another container, it groups layers
// without adding a component to their state_dict names.
type Sequential struct {
	Layers []Child
}

// NewSequential returns the composition of children, first to last.
func NewSequential(children ...Child) *Sequential {
	for i, c := range children {
		if c.Layer == nil {
			panic(fmt.Sprintf("models: sequential child %d (%q) has no layer", i, c.Name))
		}
	}
	return &Sequential{Layers: children}
}

// Seq returns the composition of layers named "0", "1", … as torch's
// nn.Sequential(*layers) names them.
func Seq(layers ...Layer) *Sequential {
	children := make([]Child, len(layers))
	for i, l := range layers {
		children[i] = Child{Name: strconv.Itoa(i), Layer: l}
	}
	return NewSequential(children...)
}

// OutShape chains the children's output shapes.
func (s *Sequential) OutShape(in tensor.Shape) (tensor.Shape, error) {
	out := in.Clone()
	for i, c := range s.Layers {
		next, err := c.Layer.OutShape(out)
		if err != nil {
			return nil, fmt.Errorf("sequential layer %d (%s): %w", i, c.Name, err)
		}
		out = next
	}
	return out, nil
}

// sequentialContext holds each child's context, in forward order.
type sequentialContext struct{ ctxs []Context }

func (c *sequentialContext) Release() {
	for _, ctx := range c.ctxs {
		if ctx != nil {
			ctx.Release()
		}
	}
	c.ctxs = nil
}

// Forward runs the children in order. Each intermediate output is
// released as soon as the next child has consumed it, so it stays alive
// only if that child's context retained it. The input is checked against
// the whole chain first, so that a mismatch panics before any work.
func (s *Sequential) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	mustOutShape("sequential", s, x)
	if len(s.Layers) == 0 {
		return identityForward(p, x)
	}
	var ctxs []Context
	if p.Grad {
		ctxs = make([]Context, len(s.Layers))
	}
	h, owned := x, false // x is borrowed; later inputs are ours
	for i := 0; i < len(s.Layers); i++ {
		var y *tensor.Tensor
		var ctx Context
		bn, fused := s.fusesReLU(p, i)
		if fused {
			y, ctx = bn.forward(p, h, true)
		} else {
			y, ctx = s.Layers[i].Layer.Forward(p, h)
		}
		if owned {
			h.Release()
		}
		if p.Grad {
			ctxs[i] = ctx
		}
		if fused {
			i++ // the ReLU ran inside the batch norm
			if p.Grad {
				ctxs[i] = fusedReLUContext{}
			}
		}
		h, owned = y, true
	}
	if !p.Grad {
		return h, nil
	}
	return h, &sequentialContext{ctxs: ctxs}
}

// Backward runs the children's backwards in reverse order, releasing each
// intermediate gradient once the previous child has consumed it.
func (s *Sequential) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	return s.backward(ctx, dy, combinedBackward(p))
}

// backwardInput is Backward with the children's BackwardInput, in the
// same order.
func (s *Sequential) backwardInput(p *Pass, ctx Context, dy *tensor.Tensor) (*tensor.Tensor, WeightGrad) {
	return splitBackward(p, func(child childBackward) *tensor.Tensor { return s.backward(ctx, dy, child) })
}

// backward is Backward's body with each child's backward run by child.
func (s *Sequential) backward(ctx Context, dy *tensor.Tensor, child childBackward) *tensor.Tensor {
	if len(s.Layers) == 0 {
		return identityBackward(ctx, dy)
	}
	c := ctx.(*sequentialContext)
	d, owned := dy, false // dy is borrowed; later gradients are ours
	for i := len(s.Layers) - 1; i >= 0; i-- {
		if _, ok := c.ctxs[i].(fusedReLUContext); ok {
			continue // its batch norm's backward runs it
		}
		dx := child(s.Layers[i].Layer, c.ctxs[i], d)
		c.ctxs[i] = nil // released by that backward
		if owned {
			d.Release()
		}
		d, owned = dx, true
	}
	c.Release()
	return d
}

// fusesReLU reports whether child i, a batch norm in training, runs
// fused with the ReLU that follows it: where the device fuses them
// (tensor.BatchNormReLUKernels), the pair runs as one kernel, which
// neither writes nor zeroes the batch norm's output apart, nor, in the
// backward, the ReLU's gradient; the results are the same bits. The
// layers and their names stay as they are.
func (s *Sequential) fusesReLU(p *Pass, i int) (*BatchNorm2D, bool) {
	if !p.Train || i+1 >= len(s.Layers) {
		return nil, false
	}
	bn, ok := s.Layers[i].Layer.(*BatchNorm2D)
	if !ok {
		return nil, false
	}
	if _, ok := s.Layers[i+1].Layer.(*ReLU); !ok {
		return nil, false
	}
	_, ok = p.Dev.(tensor.BatchNormReLUKernels)
	return bn, ok
}

// fusedReLUContext stands in a sequential's context for a ReLU that ran
// inside its batch norm's kernel; it holds nothing.
type fusedReLUContext struct{}

func (fusedReLUContext) Release() {}

// Params returns nil: a container's parameters belong to its children.
func (s *Sequential) Params() []*Param { return nil }

// Buffers returns nil.
func (s *Sequential) Buffers() []*Buffer { return nil }

// Children returns the layers in order.
func (s *Sequential) Children() []Child { return s.Layers }

// identityContext marks an identity forward; it keeps nothing.
type identityContext struct{}

func (identityContext) Release() {}

// identityForward returns a view of x, which the caller owns like any
// layer output.
func identityForward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	y := x.Reshape(x.Shape()...)
	if !p.Grad {
		return y, nil
	}
	return y, identityContext{}
}

// identityBackward returns a view of dy.
func identityBackward(ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	ctx.Release()
	return dy.Reshape(dy.Shape()...)
}
