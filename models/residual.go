package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// Residual is y = post(main(x) + shortcut(x)): ResNet's BasicBlock and
// Bottleneck. A shortcut without a layer is the identity, and a nil post
// applies nothing after the sum. With main a Sequential named "" holding
// conv1, bn1, relu, conv2, bn2, relu, conv3, bn3, the shortcut named
// "downsample" and post a ReLU, the state_dict names are torchvision's
// (conv1.weight, bn3.running_var, downsample.0.weight, …).
type Residual struct {
	Main     Child
	Shortcut Child // identity when Shortcut.Layer is nil
	Post     Layer // nil for none
}

// NewResidual returns the residual block post(main(x) + shortcut(x)).
func NewResidual(main Child, shortcut Child, post Layer) *Residual {
	if main.Layer == nil {
		panic("models: residual block without a main path")
	}
	return &Residual{Main: main, Shortcut: shortcut, Post: post}
}

// OutShape checks that both paths produce the same shape, and returns
// post's output shape for it.
func (l *Residual) OutShape(in tensor.Shape) (tensor.Shape, error) {
	m, err := l.Main.Layer.OutShape(in)
	if err != nil {
		return nil, fmt.Errorf("residual main path: %w", err)
	}
	s := in
	if l.Shortcut.Layer != nil {
		if s, err = l.Shortcut.Layer.OutShape(in); err != nil {
			return nil, fmt.Errorf("residual shortcut: %w", err)
		}
	}
	if !m.Equal(s) {
		return nil, fmt.Errorf("residual: main path gives %v but the shortcut %v for input %v", m, s, in)
	}
	if l.Post == nil {
		return m, nil
	}
	out, err := l.Post.OutShape(m)
	if err != nil {
		return nil, fmt.Errorf("residual post: %w", err)
	}
	return out, nil
}

type residualContext struct {
	main, shortcut, post Context
}

func (c *residualContext) Release() {
	for _, ctx := range []Context{c.main, c.shortcut, c.post} {
		if ctx != nil {
			ctx.Release()
		}
	}
	c.main, c.shortcut, c.post = nil, nil, nil
}

// Forward computes post(main(x) + shortcut(x)).
func (l *Residual) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	mustOutShape("residual", l, x)
	var c residualContext
	m, cm := l.Main.Layer.Forward(p, x)
	c.main = cm
	var sum *tensor.Tensor
	if l.Shortcut.Layer == nil {
		sum = addOwned(p.Dev, m, x)
	} else {
		s, cs := l.Shortcut.Layer.Forward(p, x)
		c.shortcut = cs
		sum = addOwned(p.Dev, m, s)
		s.Release()
	}
	y := sum
	switch _, relu := l.Post.(*ReLU); {
	case relu && sum.Refs() == 1:
		// The sum is this block's alone: ReLU it in place (the kernels
		// allow y to alias x), rather than into a tensor of its own
		// allocated and zeroed beside it.
		p.Dev.ReLUForward(sum, sum)
		if p.Grad {
			c.post = &reluContext{y: sum.Retain()}
		}
	case l.Post != nil:
		y, c.post = l.Post.Forward(p, sum)
		sum.Release()
	}
	if !p.Grad {
		return y, nil
	}
	return y, &c
}

// Backward sends the gradient of the sum through both paths and adds
// their input gradients.
func (l *Residual) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	return l.backward(p, ctx, dy, combinedBackward(p))
}

// backwardInput is Backward with the children's BackwardInput, in the
// same order.
func (l *Residual) backwardInput(p *Pass, ctx Context, dy *tensor.Tensor) (*tensor.Tensor, WeightGrad) {
	return splitBackward(p, func(child childBackward) *tensor.Tensor { return l.backward(p, ctx, dy, child) })
}

// backward is Backward's body with each child's backward run by child.
func (l *Residual) backward(p *Pass, ctx Context, dy *tensor.Tensor, child childBackward) *tensor.Tensor {
	c := ctx.(*residualContext)
	dsum := dy
	if l.Post != nil {
		dsum = child(l.Post, c.post, dy)
		c.post = nil
	}
	dx := child(l.Main.Layer, c.main, dsum)
	c.main = nil
	if l.Shortcut.Layer == nil {
		dx = addOwned(p.Dev, dx, dsum)
	} else {
		ds := child(l.Shortcut.Layer, c.shortcut, dsum)
		c.shortcut = nil
		dx = addOwned(p.Dev, dx, ds)
		ds.Release()
	}
	if l.Post != nil { // dy is borrowed; post's gradient is ours
		dsum.Release()
	}
	return dx
}

// Params returns nil: a container's parameters belong to its children.
func (l *Residual) Params() []*Param { return nil }

// Buffers returns nil.
func (l *Residual) Buffers() []*Buffer { return nil }

// Children returns the main path, the shortcut when it has a layer, and
// post under an empty name, in that (torchvision's) order.
func (l *Residual) Children() []Child {
	cs := []Child{l.Main}
	if l.Shortcut.Layer != nil {
		cs = append(cs, l.Shortcut)
	}
	if l.Post != nil {
		cs = append(cs, Child{Layer: l.Post})
	}
	return cs
}
