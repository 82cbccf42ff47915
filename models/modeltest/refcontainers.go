package modeltest

import (
	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

// The reference models of the containers compose their children's.

type refSequential struct{ layers []refLayer }

func (r *refSequential) forward(x refTensor) refTensor {
	for _, l := range r.layers {
		x = l.forward(x)
	}
	return x
}

func (r *refSequential) backward(dy refTensor) refTensor {
	for i := len(r.layers) - 1; i >= 0; i-- {
		dy = r.layers[i].backward(dy)
	}
	return dy
}

type refConcat struct {
	branches []refLayer
	channels []int
	in       tensor.Shape
}

func (r *refConcat) forward(x refTensor) refTensor {
	r.in = x.shape
	var outs [][]float64
	r.channels = nil
	var s tensor.Shape
	for _, b := range r.branches {
		y := b.forward(x)
		outs = append(outs, y.v)
		r.channels = append(r.channels, y.shape[1])
		s = y.shape
	}
	out := tensor.Shape{s[0], 0, s[2], s[3]}
	for _, c := range r.channels {
		out[1] += c
	}
	return refTensor{out, reference.ConcatChannels(outs, s[0], r.channels, s[2]*s[3])}
}

func (r *refConcat) backward(dy refTensor) refTensor {
	parts := reference.SplitChannels(dy.v, dy.shape[0], r.channels, dy.shape[2]*dy.shape[3])
	dx := make([]float64, r.in.Numel())
	for i, b := range r.branches {
		s := dy.shape.Clone()
		s[1] = r.channels[i]
		dx = reference.Add(dx, b.backward(refTensor{s, parts[i]}).v)
	}
	return refTensor{r.in, dx}
}

type refResidual struct{ main, shortcut, post refLayer }

func (r *refResidual) forward(x refTensor) refTensor {
	m := r.main.forward(x)
	s := x
	if r.shortcut != nil {
		s = r.shortcut.forward(x)
	}
	y := refTensor{m.shape, reference.Add(m.v, s.v)}
	if r.post != nil {
		y = r.post.forward(y)
	}
	return y
}

func (r *refResidual) backward(dy refTensor) refTensor {
	if r.post != nil {
		dy = r.post.backward(dy)
	}
	dx := r.main.backward(dy)
	ds := dy
	if r.shortcut != nil {
		ds = r.shortcut.backward(dy)
	}
	return refTensor{dx.shape, reference.Add(dx.v, ds.v)}
}
