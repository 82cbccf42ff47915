package models

import (
	"fmt"
	"math/rand/v2"

	"github.com/pipecast/pipecast/tensor"
)

// Linear is torch's nn.Linear, y = x·wᵀ + b: parameters "weight" [Out, In]
// and, with a bias, "bias" [Out].
type Linear struct {
	In, Out int
	Weight  *Param
	Bias    *Param // nil without a bias
}

// NewLinear returns a fully connected layer on dev initialised as torch's
// default: weight and bias uniform in ±1/√In.
func NewLinear(dev tensor.Device, in, out int, bias bool, rng *rand.Rand) *Linear {
	if in < 1 || out < 1 {
		panic(fmt.Sprintf("models: linear %d→%d", in, out))
	}
	l := &Linear{In: in, Out: out, Weight: &Param{Name: "weight", Value: dev.Alloc(tensor.Weights, out, in)}}
	var b *tensor.Tensor
	if bias {
		l.Bias = &Param{Name: "bias", Value: dev.Alloc(tensor.Weights, out)}
		b = l.Bias.Value
	}
	torchDefaultInit(dev, l.Weight.Value, b, rng)
	return l
}

// OutShape returns [N, Out] for x [N, In].
func (l *Linear) OutShape(in tensor.Shape) (tensor.Shape, error) {
	if len(in) != 2 || in[1] != l.In || in[0] < 1 {
		return nil, fmt.Errorf("linear %d→%d: input %v is not [N, %d]", l.In, l.Out, in, l.In)
	}
	return tensor.Shape{in[0], l.Out}, nil
}

// linearContext keeps x; noDX marks an x whose gradient is not wanted
// (Pass.NoGradInput).
type linearContext struct {
	x    *tensor.Tensor
	noDX bool
}

func (c *linearContext) Release() { c.x.Release(); c.x = nil }

// Forward computes x·wᵀ + b; the context keeps x for the weight gradient.
func (l *Linear) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	out := mustOutShape("linear", l, x)
	y := p.Dev.Alloc(tensor.Activations, out...)
	p.Dev.LinearForward(x, l.Weight.Value, paramValue(l.Bias), y)
	if !p.Grad {
		return y, nil
	}
	return y, &linearContext{x: x.Retain(), noDX: x == p.NoGradInput}
}

// Backward returns dx = dy·w and accumulates the weight and bias
// gradients: its two halves, BackwardInput's, run at once.
func (l *Linear) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	dx, w := l.backwardInput(p, ctx, dy)
	w.Run(p)
	return dx
}

// backwardInput returns dx = dy·w and defers the weight and bias
// gradients, which need x and dy.
func (l *Linear) backwardInput(p *Pass, ctx Context, dy *tensor.Tensor) (*tensor.Tensor, WeightGrad) {
	c := ctx.(*linearContext)
	var dx *tensor.Tensor
	if !c.noDX {
		dx = p.Dev.Alloc(tensor.Activations, c.x.Shape()...)
		p.Dev.LinearBackwardData(dy, l.Weight.Value, dx)
	}
	x := c.x
	c.x = nil // moved into the work: the context holds nothing more
	return dx, deferParams(l, x, dy)
}

// paramsBackward accumulates the weight and bias gradients of x and dy.
func (l *Linear) paramsBackward(p *Pass, x, dy *tensor.Tensor) {
	p.Dev.LinearBackwardParams(x, dy, l.Weight.GradFor(p.Dev), paramGrad(p.Dev, l.Bias))
}

// Params returns weight and, with a bias, bias.
func (l *Linear) Params() []*Param { return params(l.Weight, l.Bias) }

// Buffers returns nil.
func (l *Linear) Buffers() []*Buffer { return nil }

// Children returns nil.
func (l *Linear) Children() []Child { return nil }
