package models

import (
	"fmt"
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// BatchNorm2D is torch's nn.BatchNorm2d (and, on [N, C] inputs,
// nn.BatchNorm1d): parameters "weight" (γ, ones) and "bias" (β, zeros),
// buffers "running_mean" (zeros), "running_var" (ones) and
// "num_batches_tracked", in torch's state_dict order.
type BatchNorm2D struct {
	Channels int
	P        tensor.BatchNormParams

	Weight, Bias            *Param
	RunningMean, RunningVar *Buffer
	// NumBatchesTracked counts the training forwards that updated the
	// running statistics (its Count).
	NumBatchesTracked *Buffer
}

// NewBatchNorm2D returns a batch normalisation of channels channels on
// dev, initialised as torch initialises it.
func NewBatchNorm2D(dev tensor.Device, channels int, p tensor.BatchNormParams) *BatchNorm2D {
	if channels < 1 || !(p.Eps > 0) || p.Momentum < 0 || p.Momentum > 1 {
		panic(fmt.Sprintf("models: batchnorm2d with %d channels, momentum %v, eps %v", channels, p.Momentum, p.Eps))
	}
	l := &BatchNorm2D{
		Channels:          channels,
		P:                 p,
		Weight:            &Param{Name: "weight", Value: dev.Alloc(tensor.Weights, channels)},
		Bias:              &Param{Name: "bias", Value: dev.Alloc(tensor.Weights, channels)},
		RunningMean:       &Buffer{Name: "running_mean", Value: dev.Alloc(tensor.Weights, channels)},
		RunningVar:        &Buffer{Name: "running_var", Value: dev.Alloc(tensor.Weights, channels)},
		NumBatchesTracked: &Buffer{Name: "num_batches_tracked", Count: new(int64)},
	}
	Constant(dev, l.Weight.Value, 1)
	Constant(dev, l.RunningVar.Value, 1)
	return l
}

// OutShape returns in for x [N, C, H, W] or [N, C].
func (l *BatchNorm2D) OutShape(in tensor.Shape) (tensor.Shape, error) {
	if (len(in) != 4 && len(in) != 2) || in[1] != l.Channels {
		return nil, fmt.Errorf("batchnorm2d(%d): input %v is not [N, %d, H, W] or [N, %d]", l.Channels, in, l.Channels, l.Channels)
	}
	return in.Clone(), nil
}

// batchNormContext keeps x and the batch statistics of a training
// forward; an evaluation forward keeps x only (mean and invStd nil). A
// forward fused with the ReLU after it keeps that ReLU's output too.
type batchNormContext struct {
	x, mean, invStd *tensor.Tensor
	relu            *tensor.Tensor // the fused ReLU's output, or nil
}

func (c *batchNormContext) Release() {
	c.x.Release()
	c.mean.Release()
	c.invStd.Release()
	c.relu.Release()
	c.x, c.mean, c.invStd, c.relu = nil, nil, nil, nil
}

// Forward normalises x: in training mode with the batch's statistics,
// updating the running statistics and num_batches_tracked unless
// p.FreezeStats; in evaluation mode with the running statistics.
func (l *BatchNorm2D) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	return l.forward(p, x, false)
}

// forward is Forward, with the ReLU after it fused into the training
// kernel where relu (see fuseBatchNormReLU).
func (l *BatchNorm2D) forward(p *Pass, x *tensor.Tensor, relu bool) (*tensor.Tensor, Context) {
	mustOutShape("batchnorm2d", l, x)
	dev := p.Dev
	if p.Train && x.Len() == l.Channels {
		// torch raises too: the unbiased variance of one value divides
		// by zero.
		panic(&InputError{Msg: fmt.Sprintf("models: batchnorm2d forward: expected more than 1 value per channel when training, "+
			"got input shape %v (it needs more samples a call or larger feature maps)", x.Shape())})
	}
	y := dev.Alloc(tensor.Activations, x.Shape()...)
	if !p.Train {
		dev.BatchNormEval(x, l.Weight.Value, l.Bias.Value, l.RunningMean.Value, l.RunningVar.Value, y, l.P)
		if !p.Grad {
			return y, nil
		}
		return y, &batchNormContext{x: x.Retain()}
	}
	mean := dev.Alloc(tensor.Activations, l.Channels)
	invStd := dev.Alloc(tensor.Activations, l.Channels)
	runMean, runVar := l.RunningMean.Value, l.RunningVar.Value
	if p.FreezeStats {
		runMean, runVar = nil, nil
	}
	if relu {
		tensor.BatchNormReLUTrain(dev, x, l.Weight.Value, l.Bias.Value, y, runMean, runVar, mean, invStd, l.P)
	} else {
		dev.BatchNormTrain(x, l.Weight.Value, l.Bias.Value, y, runMean, runVar, mean, invStd, l.P)
	}
	if !p.FreezeStats {
		*l.NumBatchesTracked.Count++
	}
	if !p.Grad {
		mean.Release()
		invStd.Release()
		return y, nil
	}
	c := &batchNormContext{x: x.Retain(), mean: mean, invStd: invStd}
	if relu {
		c.relu = y.Retain()
	}
	return y, c
}

// Backward returns dx and accumulates the gradients of weight and bias.
// It does not split (BackwardInput defers nothing): the training kernel
// and the evaluation backward compute those gradients together with dx.
func (l *BatchNorm2D) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	c := ctx.(*batchNormContext)
	defer c.Release()
	dx := p.Dev.Alloc(tensor.Activations, c.x.Shape()...)
	if c.mean == nil {
		l.evalBackward(p.Dev, c.x, dy, dx)
		return dx
	}
	if c.relu != nil {
		tensor.BatchNormReLUBackward(p.Dev, c.x, c.relu, dy, l.Weight.Value, c.mean, c.invStd, dx, l.Weight.GradFor(p.Dev), l.Bias.GradFor(p.Dev))
		return dx
	}
	p.Dev.BatchNormBackward(c.x, dy, l.Weight.Value, c.mean, c.invStd, dx, l.Weight.GradFor(p.Dev), l.Bias.GradFor(p.Dev))
	return dx
}

// evalBackward differentiates the evaluation forward, an affine map per
// channel: y = (x − μ)·s·γ + β with the running μ and s = 1/√(σ² + eps),
// so dx = dy·γ·s, dγ += Σ dy·(x − μ)·s and dβ += Σ dy. No kernel computes
// it, because training never backpropagates an evaluation forward; it
// runs on the host in float64, for the rare caller that fine-tunes
// through frozen statistics.
func (l *BatchNorm2D) evalBackward(dev tensor.Device, x, dy, dx *tensor.Tensor) {
	xs, dys := tensor.ToHost(x), tensor.ToHost(dy)
	gamma := tensor.ToHost(l.Weight.Value)
	mu, v := tensor.ToHost(l.RunningMean.Value), tensor.ToHost(l.RunningVar.Value)
	dgamma, dbeta := l.Weight.GradFor(dev), l.Bias.GradFor(dev)
	dg, db := tensor.ToHost(dgamma), tensor.ToHost(dbeta)
	n, ch := x.Dim(0), l.Channels
	inner := x.Len() / (n * ch)
	dxs := make([]float32, x.Len())
	for c := 0; c < ch; c++ {
		s := 1 / math.Sqrt(float64(v[c])+float64(l.P.Eps))
		var sg, sb float64
		for i := 0; i < n; i++ {
			base := (i*ch + c) * inner
			for j := base; j < base+inner; j++ {
				dxs[j] = float32(float64(dys[j]) * float64(gamma[c]) * s)
				sg += float64(dys[j]) * (float64(xs[j]) - float64(mu[c])) * s
				sb += float64(dys[j])
			}
		}
		dg[c] += float32(sg)
		db[c] += float32(sb)
	}
	dev.Upload(dx, dxs)
	dev.Upload(dgamma, dg)
	dev.Upload(dbeta, db)
}

// Params returns weight and bias.
func (l *BatchNorm2D) Params() []*Param { return []*Param{l.Weight, l.Bias} }

// Buffers returns running_mean, running_var and num_batches_tracked.
func (l *BatchNorm2D) Buffers() []*Buffer {
	return []*Buffer{l.RunningMean, l.RunningVar, l.NumBatchesTracked}
}

// Children returns nil: batch normalisation is a leaf.
func (l *BatchNorm2D) Children() []Child { return nil }
