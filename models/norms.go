package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// The normalisations of decoder transformers, over each token's last
// dimension. Neither splits its backward (BackwardInput defers nothing),
// as batch norm does not: the kernel computes the parameter gradients in
// the same pass over x and dy as dx, from the same per-row sums, and the
// contract has no call for them alone; deferring them would read x and
// dy a second time and keep both alive until then, for O(N·D) work
// beside the projections' O(N·D²).

// LayerNorm is torch's nn.LayerNorm over the last dimension (GPT-2's
// ln_1, ln_2, ln_f): parameters "weight" (γ, ones) and "bias" (β,
// zeros) of Dim values.
type LayerNorm struct {
	Dim          int
	Eps          float32
	Weight, Bias *Param
}

// NewLayerNorm returns a layer normalisation of dim values on dev,
// initialised as torch initialises it.
func NewLayerNorm(dev tensor.Device, dim int, eps float32) *LayerNorm {
	if dim < 1 || !(eps > 0) {
		panic(fmt.Sprintf("models: layer norm of %d with eps %v", dim, eps))
	}
	l := &LayerNorm{
		Dim:    dim,
		Eps:    eps,
		Weight: &Param{Name: "weight", Value: dev.Alloc(tensor.Weights, dim)},
		Bias:   &Param{Name: "bias", Value: dev.Alloc(tensor.Weights, dim)},
	}
	Constant(dev, l.Weight.Value, 1)
	return l
}

// OutShape returns in for x [..., Dim].
func (l *LayerNorm) OutShape(in tensor.Shape) (tensor.Shape, error) {
	return normOutShape("layer norm", l.Dim, in)
}

// normContext keeps x and the per-row statistics the forward saved: mean
// (nil for RMSNorm) and rstd, N values each.
type normContext struct{ x, mean, rstd *tensor.Tensor }

func (c *normContext) Release() {
	c.x.Release()
	c.mean.Release()
	c.rstd.Release()
	c.x, c.mean, c.rstd = nil, nil, nil
}

// Forward normalises every row; the context keeps x, its mean and its
// reciprocal standard deviation.
func (l *LayerNorm) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	mustOutShape("layer norm", l, x)
	n := x.Len() / l.Dim
	y := p.Dev.Alloc(tensor.Activations, x.Shape()...)
	mean := p.Dev.Alloc(tensor.Activations, n)
	rstd := p.Dev.Alloc(tensor.Activations, n)
	tensor.LayerNormForward(p.Dev, x, l.Weight.Value, l.Bias.Value, y, mean, rstd, l.Eps)
	if !p.Grad {
		mean.Release()
		rstd.Release()
		return y, nil
	}
	return y, &normContext{x: x.Retain(), mean: mean, rstd: rstd}
}

// Backward returns dx and accumulates the gradients of weight and bias.
func (l *LayerNorm) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	c := ctx.(*normContext)
	defer c.Release()
	dx := p.Dev.Alloc(tensor.Activations, c.x.Shape()...)
	tensor.LayerNormBackward(p.Dev, c.x, dy, l.Weight.Value, c.mean, c.rstd, dx, l.Weight.GradFor(p.Dev), l.Bias.GradFor(p.Dev))
	return dx
}

// Params returns weight and bias.
func (l *LayerNorm) Params() []*Param { return []*Param{l.Weight, l.Bias} }

// Buffers returns nil.
func (l *LayerNorm) Buffers() []*Buffer { return nil }

// Children returns nil.
func (l *LayerNorm) Children() []Child { return nil }

// RMSNorm is Llama's LlamaRMSNorm over the last dimension
// (input_layernorm, post_attention_layernorm, model.norm): y = x /
// √(mean(x²) + Eps) · weight, parameter "weight" (ones) of Dim values.
type RMSNorm struct {
	Dim    int
	Eps    float32
	Weight *Param
}

// NewRMSNorm returns a root-mean-square normalisation of dim values on
// dev, initialised as Hugging Face initialises it.
func NewRMSNorm(dev tensor.Device, dim int, eps float32) *RMSNorm {
	if dim < 1 || !(eps > 0) {
		panic(fmt.Sprintf("models: rms norm of %d with eps %v", dim, eps))
	}
	l := &RMSNorm{Dim: dim, Eps: eps, Weight: &Param{Name: "weight", Value: dev.Alloc(tensor.Weights, dim)}}
	Constant(dev, l.Weight.Value, 1)
	return l
}

// OutShape returns in for x [..., Dim].
func (l *RMSNorm) OutShape(in tensor.Shape) (tensor.Shape, error) {
	return normOutShape("rms norm", l.Dim, in)
}

// Forward normalises every row; the context keeps x and its reciprocal
// root mean square.
func (l *RMSNorm) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	mustOutShape("rms norm", l, x)
	y := p.Dev.Alloc(tensor.Activations, x.Shape()...)
	rstd := p.Dev.Alloc(tensor.Activations, x.Len()/l.Dim)
	tensor.RMSNormForward(p.Dev, x, l.Weight.Value, y, rstd, l.Eps)
	if !p.Grad {
		rstd.Release()
		return y, nil
	}
	return y, &normContext{x: x.Retain(), rstd: rstd}
}

// Backward returns dx and accumulates the gradient of weight.
func (l *RMSNorm) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	c := ctx.(*normContext)
	defer c.Release()
	dx := p.Dev.Alloc(tensor.Activations, c.x.Shape()...)
	tensor.RMSNormBackward(p.Dev, c.x, dy, l.Weight.Value, c.rstd, dx, l.Weight.GradFor(p.Dev))
	return dx
}

// Params returns weight.
func (l *RMSNorm) Params() []*Param { return []*Param{l.Weight} }

// Buffers returns nil.
func (l *RMSNorm) Buffers() []*Buffer { return nil }

// Children returns nil.
func (l *RMSNorm) Children() []Child { return nil }

// normOutShape returns in when its last dimension is dim.
func normOutShape(op string, dim int, in tensor.Shape) (tensor.Shape, error) {
	if len(in) < 2 || !in.Valid() || in[len(in)-1] != dim {
		return nil, fmt.Errorf("%s(%d): input %v is not [..., %d] rows", op, dim, in, dim)
	}
	return in.Clone(), nil
}
