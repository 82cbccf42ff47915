package runner

import (
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// Per-block timing runs a stage's blocks one at a time, as
// models.Sequential does, so that each block's forward or backward can be
// timed on its own. The memory behaviour is Sequential's: an intermediate
// output is released once the next block has consumed it, each block
// keeps its own context, and the backward runs in reverse.

// blockContext holds each block's context of a block-by-block forward,
// in forward order.
type blockContext struct{ ctxs []models.Context }

// Release drops every context not yet consumed by a backward.
func (c *blockContext) Release() {
	for _, ctx := range c.ctxs {
		if ctx != nil {
			ctx.Release()
		}
	}
	c.ctxs = nil
}

// forward runs stage s's forward with layer (the stage's own layers or a
// replica of them): in one call, or block by block when per-block timing
// is on.
func (w *worker) forward(op schedule.Op, layer *models.Sequential, s int, p *models.Pass, x *tensor.Tensor) (*tensor.Tensor, models.Context) {
	if !w.blocks || w.rec == nil || len(layer.Layers) == 0 {
		return layer.Forward(p, x)
	}
	return w.forwardBlocks(op, layer, w.t.bounds[s], p, x)
}

// backward is forward's counterpart; ctx must come from forward with the
// same per-block setting.
func (w *worker) backward(op schedule.Op, layer *models.Sequential, s int, p *models.Pass, ctx models.Context, dy *tensor.Tensor) *tensor.Tensor {
	if _, ok := ctx.(*blockContext); !ok {
		return layer.Backward(p, ctx, dy)
	}
	return w.backwardBlocks(op, layer, w.t.bounds[s], p, ctx.(*blockContext), dy, nil)
}

// forwardBlocks runs layer's blocks in order, recording an event for each
// one with its global index (first is the index of layer's first block).
func (w *worker) forwardBlocks(op schedule.Op, layer *models.Sequential, first int, p *models.Pass, x *tensor.Tensor) (*tensor.Tensor, models.Context) {
	var bc *blockContext
	if p.Grad {
		bc = &blockContext{ctxs: make([]models.Context, len(layer.Layers))}
	}
	step := w.step.step
	h := x
	for i, c := range layer.Layers {
		w.block = first + i
		start := w.dev.Now()
		y, ctx := c.Layer.Forward(p, h)
		end := w.dev.Now()
		w.rec.Record(recordEvent(step, w.d, op, first+i, start, end, 0))
		if i > 0 { // x is borrowed; later inputs are ours
			h.Release()
		}
		if bc != nil {
			bc.ctxs[i] = ctx
		}
		h = y
	}
	if bc == nil {
		return h, nil
	}
	return h, bc
}

// backwardInput is backward's split counterpart: the input gradient now,
// the parameter gradients deferred to the returned work (see
// models.BackwardInput).
func (w *worker) backwardInput(op schedule.Op, layer *models.Sequential, s int, p *models.Pass, ctx models.Context, dy *tensor.Tensor) (*tensor.Tensor, models.WeightGrad) {
	bc, ok := ctx.(*blockContext)
	if !ok {
		return models.BackwardInput(layer, p, ctx, dy)
	}
	bw := &blockWeights{}
	dx := w.backwardBlocks(op, layer, w.t.bounds[s], p, bc, dy, bw)
	return dx, bw
}

// backwardWeight runs deferred weight gradients: block by block, each
// timed, when the input gradient ran block by block.
func (w *worker) backwardWeight(op schedule.Op, p *models.Pass, wg models.WeightGrad) {
	bw, ok := wg.(*blockWeights)
	if !ok || w.rec == nil {
		wg.Run(p)
		return
	}
	step := w.step.step
	for i, b := range bw.blocks {
		w.block = b
		start := w.dev.Now()
		if work := bw.works[i]; work != nil {
			work.Run(p)
			bw.works[i] = nil
		}
		end := w.dev.Now()
		w.rec.Record(recordEvent(step, w.d, op, b, start, end, 0))
	}
	bw.works = nil
}

// blockWeights is the deferred weight gradients of a block-by-block split
// backward: for each block, in the order the backward ran them, its work
// (nil for a block without weight gradients, which still gets an event,
// so that every block of a stage has a time for each phase).
type blockWeights struct {
	blocks []int
	works  []models.WeightGrad
}

// Run accumulates every block's parameter gradients.
func (b *blockWeights) Run(p *models.Pass) {
	for i, work := range b.works {
		if work != nil {
			work.Run(p)
			b.works[i] = nil
		}
	}
	b.works = nil
}

// Release drops every block's work unrun.
func (b *blockWeights) Release() {
	for _, work := range b.works {
		if work != nil {
			work.Release()
		}
	}
	b.works = nil
}

// backwardBlocks runs the blocks' backwards in reverse, recording an
// event for each, and releases each intermediate gradient once the block
// before has consumed it. With bw set it runs each block's input
// gradient alone (models.BackwardInput) and appends the deferred weight
// gradients to bw.
func (w *worker) backwardBlocks(op schedule.Op, layer *models.Sequential, first int, p *models.Pass, bc *blockContext, dy *tensor.Tensor, bw *blockWeights) *tensor.Tensor {
	step := w.step.step
	d := dy
	last := len(layer.Layers) - 1
	for i := last; i >= 0; i-- {
		w.block = first + i
		start := w.dev.Now()
		var dx *tensor.Tensor
		if bw != nil {
			var work models.WeightGrad
			dx, work = models.BackwardInput(layer.Layers[i].Layer, p, bc.ctxs[i], d)
			bw.blocks = append(bw.blocks, first+i)
			bw.works = append(bw.works, work)
		} else {
			dx = layer.Layers[i].Layer.Backward(p, bc.ctxs[i], d)
		}
		end := w.dev.Now()
		w.rec.Record(recordEvent(step, w.d, op, first+i, start, end, 0))
		bc.ctxs[i] = nil // released by that Backward
		if i < last {    // dy is borrowed; later gradients are ours
			d.Release()
		}
		d = dx
	}
	bc.Release()
	return d
}
