package models

import (
	"fmt"
	"math/rand/v2"

	"github.com/pipecast/pipecast/tensor"
)

// Conv2DConfig describes a convolution as torch's nn.Conv2d with groups 1
// and dilation 1.
type Conv2DConfig struct {
	In, Out          int // channels
	KH, KW           int // kernel size
	StrideH, StrideW int
	PadH, PadW       int
	Bias             bool
}

// Params returns the strides and padding in the kernels' form.
func (c Conv2DConfig) Params() tensor.Conv2DParams {
	return tensor.Conv2DParams{StrideH: c.StrideH, StrideW: c.StrideW, PadH: c.PadH, PadW: c.PadW}
}

// Conv2D is torch's nn.Conv2d: parameters "weight" [Out, In, KH, KW] and,
// with Bias, "bias" [Out].
type Conv2D struct {
	Cfg    Conv2DConfig
	Weight *Param
	Bias   *Param // nil without a bias
}

// NewConv2D returns a convolution on dev initialised as torch's default:
// weight and bias uniform in ±1/√fan_in, fan_in = In·KH·KW. It panics for
// a configuration no convolution can have.
func NewConv2D(dev tensor.Device, cfg Conv2DConfig, rng *rand.Rand) *Conv2D {
	if cfg.In < 1 || cfg.Out < 1 || cfg.KH < 1 || cfg.KW < 1 {
		panic(fmt.Sprintf("models: conv2d with %d→%d channels and a %dx%d kernel", cfg.In, cfg.Out, cfg.KH, cfg.KW))
	}
	if err := cfg.Params().Validate(); err != nil {
		panic("models: " + err.Error())
	}
	l := &Conv2D{Cfg: cfg, Weight: &Param{Name: "weight", Value: dev.Alloc(tensor.Weights, cfg.Out, cfg.In, cfg.KH, cfg.KW)}}
	var bias *tensor.Tensor
	if cfg.Bias {
		l.Bias = &Param{Name: "bias", Value: dev.Alloc(tensor.Weights, cfg.Out)}
		bias = l.Bias.Value
	}
	torchDefaultInit(dev, l.Weight.Value, bias, rng)
	return l
}

// OutShape returns [N, Out, OH, OW] for x [N, In, H, W].
func (l *Conv2D) OutShape(in tensor.Shape) (tensor.Shape, error) {
	c := l.Cfg
	if len(in) != 4 || in[1] != c.In {
		return nil, fmt.Errorf("conv2d %d→%d: input %v is not [N, %d, H, W]", c.In, c.Out, in, c.In)
	}
	// Checked before OutSize, whose integer division truncates a
	// negative numerator towards zero.
	if in[2]+2*c.PadH < c.KH || in[3]+2*c.PadW < c.KW {
		return nil, fmt.Errorf("conv2d %dx%d with padding %dx%d: input %dx%d is smaller than the kernel",
			c.KH, c.KW, c.PadH, c.PadW, in[2], in[3])
	}
	oh, ow := c.Params().OutSize(in[2], in[3], c.KH, c.KW)
	return tensor.Shape{in[0], c.Out, oh, ow}, nil
}

// conv2DContext keeps x; noDX marks an x whose gradient is not wanted
// (Pass.NoGradInput).
type conv2DContext struct {
	x    *tensor.Tensor
	noDX bool
}

func (c *conv2DContext) Release() { c.x.Release(); c.x = nil }

// Forward computes the convolution; the context keeps x for the filter
// gradient.
func (l *Conv2D) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	out := mustOutShape("conv2d", l, x)
	y := p.Dev.Alloc(tensor.Activations, out...)
	p.Dev.Conv2DForward(x, l.Weight.Value, paramValue(l.Bias), y, l.Cfg.Params())
	if !p.Grad {
		return y, nil
	}
	return y, &conv2DContext{x: x.Retain(), noDX: x == p.NoGradInput}
}

// Backward returns dx and accumulates the weight and bias gradients: its
// two halves, BackwardInput's, run at once.
func (l *Conv2D) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	dx, w := l.backwardInput(p, ctx, dy)
	w.Run(p)
	return dx
}

// backwardInput returns dx and defers the weight and bias gradients,
// which need x and dy.
func (l *Conv2D) backwardInput(p *Pass, ctx Context, dy *tensor.Tensor) (*tensor.Tensor, WeightGrad) {
	c := ctx.(*conv2DContext)
	var dx *tensor.Tensor
	if !c.noDX {
		dx = p.Dev.Alloc(tensor.Activations, c.x.Shape()...)
		p.Dev.Conv2DBackwardData(dy, l.Weight.Value, dx, l.Cfg.Params())
	}
	x := c.x
	c.x = nil // moved into the work: the context holds nothing more
	return dx, deferParams(l, x, dy)
}

// paramsBackward accumulates the weight and bias gradients of x and dy.
func (l *Conv2D) paramsBackward(p *Pass, x, dy *tensor.Tensor) {
	p.Dev.Conv2DBackwardFilter(x, dy, l.Weight.GradFor(p.Dev), paramGrad(p.Dev, l.Bias), l.Cfg.Params())
}

// Params returns weight and, with a bias, bias.
func (l *Conv2D) Params() []*Param { return params(l.Weight, l.Bias) }

// Buffers returns nil: a convolution has no buffers.
func (l *Conv2D) Buffers() []*Buffer { return nil }

// Children returns nil: a convolution is a leaf.
func (l *Conv2D) Children() []Child { return nil }

// paramValue returns p's value, or nil for an absent parameter such as a
// convolution's bias when it has none.
func paramValue(p *Param) *tensor.Tensor {
	if p == nil {
		return nil
	}
	return p.Value
}

// paramGrad returns p's gradient, allocating it on first use, or nil for
// an absent parameter.
func paramGrad(dev tensor.Device, p *Param) *tensor.Tensor {
	if p == nil {
		return nil
	}
	return p.GradFor(dev)
}

// params lists the parameters that are present, in order.
func params(ps ...*Param) []*Param {
	var out []*Param
	for _, p := range ps {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// mustOutShape returns l's output shape for x, panicking with the layer's
// explanation when l cannot take x: feeding a layer a tensor it cannot
// take is a programming error.
func mustOutShape(op string, l Layer, x *tensor.Tensor) tensor.Shape {
	s, err := l.OutShape(x.Shape())
	if err != nil {
		panic(fmt.Sprintf("models: %s forward: %v", op, err))
	}
	return s
}
