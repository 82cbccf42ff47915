package models

import (
	"strings"

	"github.com/pipecast/pipecast/tensor"
)

// Pass describes one forward or backward call: the device it runs on, the
// mode, and the counters that make dropout masks reproducible.
type Pass struct {
	Dev tensor.Device
	// Train selects training mode: batch statistics in batch-norm,
	// dropout on. Otherwise layers use running statistics and dropout is
	// the identity.
	Train bool
	// Grad asks Forward for a context that Backward can use. Without it
	// layers keep nothing (a no-grad forward, such as coop's predict step)
	// and return a nil context.
	Grad bool
	// FreezeStats keeps batch-norm's running statistics unchanged in
	// training mode, for forwards of replicas (coop's predict step).
	FreezeStats bool
	// Seed, Step and Sample key dropout masks: the run's seed, the
	// training step, and the index within the mini-batch of x's first
	// sample.
	Seed   uint64
	Step   uint64
	Sample int
	// NoGradInput, when set, is a forward's input whose gradient no one
	// needs: the mini-batch a first stage reads. A convolution or linear
	// layer whose forward reads it directly skips the input gradient, its
	// backward returning nil, as torch skips the gradient of an input that
	// does not require one. A container whose child returns nil returns
	// nil too, never the gradient of its other parts alone.
	NoGradInput *tensor.Tensor
}

// Context is what a Forward saved for its Backward.
type Context interface {
	// Release drops the references the context holds; Backward calls it.
	// It is also how a caller discards a forward it will not
	// backpropagate.
	Release()
}

// Layer is a differentiable function with parameters on a device.
type Layer interface {
	// Forward computes y from x. With p.Grad it returns the context
	// Backward needs; otherwise the context is nil.
	Forward(p *Pass, x *tensor.Tensor) (y *tensor.Tensor, ctx Context)
	// Backward returns dx from dy, accumulating parameter gradients, and
	// releases ctx. p must describe the same call as the forward's.
	Backward(p *Pass, ctx Context, dy *tensor.Tensor) (dx *tensor.Tensor)
	// OutShape returns the shape of y for an x of shape in, or an error
	// saying why the layer cannot take it.
	OutShape(in tensor.Shape) (tensor.Shape, error)
	// Params returns the layer's own parameters (not its children's).
	Params() []*Param
	// Buffers returns the layer's own buffers (not its children's).
	Buffers() []*Buffer
	// Children returns the layers a composite is made of, in state_dict
	// order; nil for a leaf.
	Children() []Child
}

// Child is a named part of a composite layer. Its name is one component
// of the state_dict names below it ("layer1", "0", "conv"); an empty name
// adds no component, so a composite can group layers without changing
// their names (torchvision's Inception branches are siblings by name).
type Child struct {
	Name  string
	Layer Layer
}

// Param is a trainable tensor with its gradient and optimizer state.
type Param struct {
	// Name is the local name: "weight" or "bias".
	Name  string
	Value *tensor.Tensor
	// Grad accumulates gradients; it is allocated, zeroed, by the first
	// backward that needs it (GradFor), as torch allocates .grad lazily.
	Grad *tensor.Tensor
	// State holds the optimizer's per-parameter tensors (its Slots, such
	// as SGD's momentum buffer), allocated by the optimizer on the
	// parameter's first update; nil before, and for an optimizer without
	// state.
	State []*tensor.Tensor
}

// GradFor returns the parameter's gradient tensor, allocating it zeroed in
// the Gradients category on first use.
func (p *Param) GradFor(dev tensor.Device) *tensor.Tensor {
	if p.Grad == nil {
		p.Grad = dev.Alloc(tensor.Gradients, p.Value.Shape()...)
	}
	return p.Grad
}

// Release frees the parameter's value, gradient and optimizer state.
func (p *Param) Release() {
	p.Value.Release()
	p.Grad.Release()
	for _, s := range p.State {
		s.Release()
	}
	p.Value, p.Grad, p.State = nil, nil, nil
}

// Buffer is state that is saved with a model but not trained:
// batch-norm's running statistics, or a counter such as
// num_batches_tracked (Count, an int64 in torch's state_dict).
type Buffer struct {
	Name  string
	Value *tensor.Tensor // nil for a counter
	Count *int64         // nil for a tensor
}

// NamedParam is a parameter with its full state_dict name.
type NamedParam struct {
	Name  string
	Param *Param
}

// NamedBuffer is a buffer with its full state_dict name.
type NamedBuffer struct {
	Name   string
	Buffer *Buffer
}

// Walk calls fn on l and every layer below it, depth first in state_dict
// order, with each layer's dotted path ("" for l itself).
func Walk(l Layer, fn func(path string, l Layer)) {
	walk("", l, fn)
}

func walk(path string, l Layer, fn func(string, Layer)) {
	fn(path, l)
	for _, c := range l.Children() {
		walk(joinName(path, c.Name), c.Layer, fn)
	}
}

func joinName(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ".")
}

// Params returns every parameter of l and its children with state_dict
// names such as "layer1.0.conv1.weight", in state_dict order.
//
// A parameter that several layers share (a Tie: GPT-2's token embedding,
// which its LM head reuses) is listed once, under the name of its first
// use, as Hugging Face's safetensors files keep a tied tensor once: so
// that whatever walks the list (Materialize, an optimizer's update,
// ParamCount) touches each parameter once.
func Params(l Layer) []NamedParam {
	var out []NamedParam
	seen := map[*Param]bool{}
	Walk(l, func(path string, l Layer) {
		for _, p := range l.Params() {
			if !seen[p] {
				seen[p] = true
				out = append(out, NamedParam{joinName(path, p.Name), p})
			}
		}
	})
	return out
}

// Buffers returns every buffer of l and its children with state_dict
// names such as "bn1.running_mean".
func Buffers(l Layer) []NamedBuffer {
	var out []NamedBuffer
	Walk(l, func(path string, l Layer) {
		for _, b := range l.Buffers() {
			out = append(out, NamedBuffer{joinName(path, b.Name), b})
		}
	})
	return out
}

// ParamCount returns the number of trainable scalars of l and its
// children.
func ParamCount(l Layer) int {
	n := 0
	for _, p := range Params(l) {
		n += p.Param.Value.Len()
	}
	return n
}

// ZeroGrads zeroes every allocated gradient of l, as torch's zero_grad
// with set_to_none=False.
func ZeroGrads(dev tensor.Device, l Layer) {
	for _, p := range Params(l) {
		if p.Param.Grad != nil {
			dev.Fill(p.Param.Grad, 0)
		}
	}
}
