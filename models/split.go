package models

import "github.com/pipecast/pipecast/tensor"

// This file splits a backward into its two halves, as the zero-bubble
// schedules of Qi et al. (ICLR 2024) run them: B, the input gradient the
// previous stage waits for, and W, the parameter gradients, which no
// other stage needs and a schedule may run later to fill its bubbles.
//
// Convolutions and linear layers split: B computes dx, and W keeps x and
// dy and runs the filter or weight kernel. Batch normalisation does not:
// its kernel computes the parameter gradients together with dx, as
// by-products of the same reductions (and so does the host code of its
// evaluation backward), so both stay in B and it defers nothing.
// Parameter-free layers defer nothing either. Containers split by
// splitting their children. Of the decoder transformers' layers, the
// embeddings defer their weight gradients (an embedding's whole
// backward, token ids having no gradient) and the layer and RMS norms
// keep theirs in B, as batch norm does (norms.go says why).

// WeightGrad is the deferred half of a split backward: what BackwardInput
// kept to accumulate parameter gradients later.
type WeightGrad interface {
	// Run accumulates the parameter gradients into each Param's Grad
	// (GradFor) and releases everything it holds. p describes the same
	// call as the backward's.
	Run(p *Pass)
	// Release drops what it holds without computing (a failed step).
	Release()
}

// BackwardInput is l.Backward without the parameter gradients: it returns
// dx from dy, releases ctx, and returns the work that accumulates the
// parameter gradients, or nil when there is none to defer.
// BackwardInput followed by Run equals Backward bit for bit. Like
// Backward it borrows dy; the work holds its own references to what it
// needs, until it runs or is released.
func BackwardInput(l Layer, p *Pass, ctx Context, dy *tensor.Tensor) (dx *tensor.Tensor, w WeightGrad) {
	if s, ok := l.(inputBackwarder); ok {
		return s.backwardInput(p, ctx, dy)
	}
	return l.Backward(p, ctx, dy), nil
}

// inputBackwarder is a layer that can defer its parameter gradients; a
// layer without it computes them in BackwardInput through Backward.
type inputBackwarder interface {
	backwardInput(p *Pass, ctx Context, dy *tensor.Tensor) (*tensor.Tensor, WeightGrad)
}

// The layers that split.
var (
	_ inputBackwarder = (*Linear)(nil)
	_ inputBackwarder = (*Conv2D)(nil)
	_ inputBackwarder = (*Sequential)(nil)
	_ inputBackwarder = (*Residual)(nil)
	_ inputBackwarder = (*Concat)(nil)
	_ inputBackwarder = (*Embedding)(nil)
	_ inputBackwarder = (*PositionEmbedding)(nil)
	_ inputBackwarder = (*PerToken)(nil)
	_ inputBackwarder = (*Attention)(nil)
	_ inputBackwarder = (*GatedMLP)(nil)
	_ inputBackwarder = (*DecoderLayer)(nil)
)

// weightGrads runs the works of a container's children in the order they
// were collected.
type weightGrads []WeightGrad

// Run runs every work in order.
func (ws weightGrads) Run(p *Pass) {
	for _, w := range ws {
		w.Run(p)
	}
}

// Release releases every work.
func (ws weightGrads) Release() {
	for _, w := range ws {
		w.Release()
	}
}

// add appends w, flattening a nested container's list; nil adds nothing.
func (ws *weightGrads) add(w WeightGrad) {
	switch w := w.(type) {
	case nil:
	case weightGrads:
		*ws = append(*ws, w...)
	default:
		*ws = append(*ws, w)
	}
}

// work returns the collected works as one, or nil when there are none.
func (ws weightGrads) work() WeightGrad {
	switch len(ws) {
	case 0:
		return nil
	case 1:
		return ws[0]
	}
	return ws
}

// childBackward runs one child's backward inside a container's: the
// combined Backward, or BackwardInput collecting the child's work. A
// container writes its backward once, over a childBackward, and gets both.
type childBackward func(l Layer, ctx Context, dy *tensor.Tensor) *tensor.Tensor

// combinedBackward is the childBackward of Backward.
func combinedBackward(p *Pass) childBackward {
	return func(l Layer, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
		return l.Backward(p, ctx, dy)
	}
}

// inputBackward is the childBackward of BackwardInput: it adds each
// child's work to ws.
func (ws *weightGrads) inputBackward(p *Pass) childBackward {
	return func(l Layer, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
		dx, w := BackwardInput(l, p, ctx, dy)
		ws.add(w)
		return dx
	}
}

// splitBackward runs a container's backward, written over a
// childBackward, with the children's BackwardInput, and returns dx with
// their works.
func splitBackward(p *Pass, backward func(childBackward) *tensor.Tensor) (*tensor.Tensor, WeightGrad) {
	var ws weightGrads
	dx := backward(ws.inputBackward(p))
	return dx, ws.work()
}

// paramsKernel is a layer whose parameter gradients are one kernel on its
// input and the gradient of its output: a linear layer or a convolution.
type paramsKernel interface {
	// paramsBackward accumulates the parameter gradients from x and dy.
	paramsBackward(p *Pass, x, dy *tensor.Tensor)
}

// paramsGrad is the deferred parameter gradient of a paramsKernel: the
// layer, with its input and the gradient of its output.
type paramsGrad struct {
	l     paramsKernel
	x, dy *tensor.Tensor
}

// deferParams returns l's work on x and dy, taking over the caller's
// reference to x and retaining dy, which the caller borrowed. x is nil
// for a layer whose parameter gradients need dy alone (GPT-2's position
// embedding).
func deferParams(l paramsKernel, x, dy *tensor.Tensor) *paramsGrad {
	return &paramsGrad{l: l, x: x, dy: dy.Retain()}
}

// Run accumulates the parameter gradients and releases x and dy.
func (w *paramsGrad) Run(p *Pass) {
	if w.dy == nil {
		panic("models: weight gradient run after it ran or was released")
	}
	w.l.paramsBackward(p, w.x, w.dy)
	w.Release()
}

// Release drops x and dy.
func (w *paramsGrad) Release() {
	w.x.Release()
	w.dy.Release()
	w.x, w.dy = nil, nil
}
