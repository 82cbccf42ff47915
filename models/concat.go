package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// Concat runs every branch on the same input and concatenates their
// outputs along channels, in order: torchvision's Inception modules
// (torch.cat(outputs, 1)). A branch may itself be a Sequential or a
// Concat, such as InceptionE's branch3x3_1 followed by branch3x3_2a and
// branch3x3_2b side by side.
type Concat struct {
	Branches []Child
}

// NewConcat returns the channel concatenation of branches.
func NewConcat(branches ...Child) *Concat {
	if len(branches) == 0 {
		panic("models: concat of no branches")
	}
	for i, b := range branches {
		if b.Layer == nil {
			panic(fmt.Sprintf("models: concat branch %d (%q) has no layer", i, b.Name))
		}
	}
	return &Concat{Branches: branches}
}

// OutShape returns [N, ΣCi, H, W] when every branch maps in to [N, Ci, H,
// W] with the same N, H and W.
func (l *Concat) OutShape(in tensor.Shape) (tensor.Shape, error) {
	var out tensor.Shape
	for i, b := range l.Branches {
		s, err := b.Layer.OutShape(in)
		if err != nil {
			return nil, fmt.Errorf("concat branch %d (%s): %w", i, b.Name, err)
		}
		if len(s) != 4 {
			return nil, fmt.Errorf("concat branch %d (%s): output %v is not [N, C, H, W]", i, b.Name, s)
		}
		if out == nil {
			out = s.Clone()
			continue
		}
		if s[0] != out[0] || s[2] != out[2] || s[3] != out[3] {
			return nil, fmt.Errorf("concat branch %d (%s): output %v does not match the first branch's %v outside channels",
				i, b.Name, s, out)
		}
		out[1] += s[1]
	}
	return out, nil
}

// concatContext holds each branch's context and output channels.
type concatContext struct {
	ctxs     []Context
	channels []int
}

func (c *concatContext) Release() {
	for _, ctx := range c.ctxs {
		if ctx != nil {
			ctx.Release()
		}
	}
	c.ctxs = nil
}

// Forward runs the branches in order on x and concatenates their outputs.
func (l *Concat) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	out := mustOutShape("concat", l, x)
	outs := make([]*tensor.Tensor, len(l.Branches))
	var c *concatContext
	if p.Grad {
		c = &concatContext{ctxs: make([]Context, len(l.Branches)), channels: make([]int, len(l.Branches))}
	}
	for i, b := range l.Branches {
		y, ctx := b.Layer.Forward(p, x)
		outs[i] = y
		if c != nil {
			c.ctxs[i], c.channels[i] = ctx, y.Dim(1)
		}
	}
	y := p.Dev.Alloc(tensor.Activations, out...)
	p.Dev.ConcatChannels(y, outs)
	for _, o := range outs {
		o.Release()
	}
	if c == nil {
		return y, nil
	}
	return y, c
}

// Backward splits dy by branch, runs each branch's backward and sums
// their input gradients.
func (l *Concat) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	return l.backward(p, ctx, dy, combinedBackward(p))
}

// backwardInput is Backward with the branches' BackwardInput, in the
// same order.
func (l *Concat) backwardInput(p *Pass, ctx Context, dy *tensor.Tensor) (*tensor.Tensor, WeightGrad) {
	return splitBackward(p, func(child childBackward) *tensor.Tensor { return l.backward(p, ctx, dy, child) })
}

// backward is Backward's body with each branch's backward run by child.
func (l *Concat) backward(p *Pass, ctx Context, dy *tensor.Tensor, child childBackward) *tensor.Tensor {
	c := ctx.(*concatContext)
	n, h, w := dy.Dim(0), dy.Dim(2), dy.Dim(3)
	dys := make([]*tensor.Tensor, len(c.channels))
	for i, ch := range c.channels {
		dys[i] = p.Dev.Alloc(tensor.Activations, n, ch, h, w)
	}
	p.Dev.SplitChannels(dy, dys)
	var dx *tensor.Tensor
	for i, b := range l.Branches {
		dxi := child(b.Layer, c.ctxs[i], dys[i])
		c.ctxs[i] = nil // released by that backward
		dys[i].Release()
		if i == 0 {
			dx = dxi
			continue
		}
		dx = addOwned(p.Dev, dx, dxi) // nil if any branch's is (see addOwned)
		dxi.Release()
	}
	c.Release()
	return dx
}

// Params returns nil: a container's parameters belong to its children.
func (l *Concat) Params() []*Param { return nil }

// Buffers returns nil.
func (l *Concat) Buffers() []*Buffer { return nil }

// Children returns the branches in order.
func (l *Concat) Children() []Child { return l.Branches }

// addOwned returns a + b, taking over the caller's reference to a and
// borrowing b. It sums into a's memory when nothing else holds a (no
// context kept it, no view shares it), and into a new tensor otherwise,
// so that no saved activation or borrowed gradient is ever overwritten.
// A nil term, a gradient not computed because the input it is the
// gradient of needs none (Pass.NoGradInput), makes the sum nil too: a
// sum of the other parts alone would be a wrong gradient.
func addOwned(dev tensor.Device, a, b *tensor.Tensor) *tensor.Tensor {
	if a == nil || b == nil {
		a.Release()
		return nil
	}
	if a.Refs() == 1 {
		dev.Add(a, a, b)
		return a
	}
	sum := dev.Alloc(tensor.Activations, a.Shape()...)
	dev.Add(sum, a, b)
	a.Release()
	return sum
}
