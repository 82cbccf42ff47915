package runner

import (
	"fmt"
	"math"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// own returns stage s's layers, which this device must own: a program
// the checker accepted computes only on the stages its device owns.
func (w *worker) own(s int) *models.Sequential {
	if s < 0 || s >= len(w.stages) || w.stages[s] == nil {
		panic(fmt.Sprintf("runner: device %d does not own stage %d", w.k, s))
	}
	return w.stages[s]
}

// forwardOp runs stage op.Stage's forward of op.Micro, keeping its
// context for the backward if op.Keep, and holds the output for the
// send, the loss or the next stage on this device.
func (w *worker) forwardOp(op schedule.Op) error {
	s := w.step
	lo, _ := w.micro(op.Micro)
	x := w.input(op.Stage, op.Micro)
	y, c := w.forward(op, w.own(op.Stage), op.Stage, w.inputPass(op.Keep, lo, op.Stage, x), x)
	if op.Keep {
		s.ctxs[at(op.Stage, op.Micro)] = c
	}
	if w.t.last(op.Stage) || !w.t.program.Options.PredictsBoundaries() {
		s.outputs[at(op.Stage, op.Micro)] = y
	} else {
		y.Release() // the next stage's input came from the prediction
	}
	return nil
}

// recomputeOp re-runs a checkpointed forward, keeping its context.
func (w *worker) recomputeOp(op schedule.Op) error {
	lo, _ := w.micro(op.Micro)
	x := w.input(op.Stage, op.Micro)
	p := w.inputPass(true, lo, op.Stage, x)
	// The checkpointed forward already counted this micro-batch in the
	// running statistics; the recomputation must not count it again.
	p.FreezeStats = true
	y, c := w.forward(op, w.own(op.Stage), op.Stage, p, x)
	y.Release()
	w.step.ctxs[at(op.Stage, op.Micro)] = c
	return nil
}

// lossOp computes the loss of op.Micro on the last stage's output and
// holds the gradient of that output.
func (w *worker) lossOp(op schedule.Op) error {
	s := w.step
	lo, hi := w.micro(op.Micro)
	logits := take(s.outputs, at(op.Stage, op.Micro))
	labels, err := w.labels(lo, hi)
	if err != nil {
		logits.Release()
		return err
	}
	// The mean over the step's labels: R·B·L, L a sample, so that the
	// replicas' gradients sum to the gradient of the whole step's mean.
	scale := 1 / float32(w.t.cfg.StepSamples()*s.batch.PerSample)
	loss, dl := models.CrossEntropy(w.pass(true, lo), logits, labels, scale)
	logits.Release()
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		dl.Release()
		return w.faultf("non-finite loss %v of micro-batch %d: the training diverged (a smaller --lr may help)", loss, op.Micro)
	}
	s.loss += loss
	s.dOut[at(op.Stage, op.Micro)] = dl
	return nil
}

// backwardOp runs stage op.Stage's backward of op.Micro: the whole of it
// (Backward), or only the input gradient (BackwardInput), holding the
// weight gradient's work for the BackwardWeight. The input gradient is
// held for the send or for the previous stage on this device.
func (w *worker) backwardOp(op schedule.Op) error {
	s := w.step
	key := at(op.Stage, op.Micro)
	lo, _ := w.micro(op.Micro)
	c, ok := s.ctxs[key]
	if !ok {
		return fmt.Errorf("no saved forward for stage %d micro-batch %d", op.Stage, op.Micro)
	}
	delete(s.ctxs, key)
	dy := w.outputGrad(op.Stage, op.Micro)
	var dx *tensor.Tensor
	if op.Kind == schedule.BackwardInput {
		var wg models.WeightGrad
		dx, wg = w.backwardInput(op, w.own(op.Stage), op.Stage, w.pass(true, lo), c, dy)
		s.weights[key] = wg // nil when the stage has no weight gradient to defer
	} else {
		dx = w.backward(op, w.own(op.Stage), op.Stage, w.pass(true, lo), c, dy)
	}
	dy.Release()
	if in, ok := s.inputs[key]; ok {
		in.Release()
		delete(s.inputs, key)
	}
	if op.Stage > 0 {
		s.dIn[key] = dx
	} else {
		dx.Release()
	}
	return nil
}

// backwardWeightOp accumulates the parameter gradients that op.Stage's
// BackwardInput of op.Micro deferred.
func (w *worker) backwardWeightOp(op schedule.Op) error {
	s := w.step
	key := at(op.Stage, op.Micro)
	wg, ok := s.weights[key]
	if !ok {
		return fmt.Errorf("no input-gradient pass before the weight gradient of stage %d micro-batch %d", op.Stage, op.Micro)
	}
	delete(s.weights, key)
	if wg != nil {
		lo, _ := w.micro(op.Micro)
		w.backwardWeight(op, w.pass(true, lo), wg)
	}
	return nil
}

// update checks and applies the accumulated gradients of every stage the
// device owns, then zeroes them.
func (w *worker) update() error {
	for _, st := range w.owned {
		if err := w.checkGradients(st); err != nil {
			return err
		}
	}
	w.opt.Update(w.dev, w.params)
	return nil
}

// input returns a view of stage st's input for micro-batch j that the
// caller must not release (it is released with the step state): the
// received tensor, a slice of the mini-batch (stage 0) or of coop's
// boundary, or the output of stage st−1's forward on this device, which
// is handed over in place.
func (w *worker) input(st, j int) *tensor.Tensor {
	s := w.step
	key := at(st, j)
	if in, ok := s.inputs[key]; ok {
		return in
	}
	if y, ok := s.outputs[at(st-1, j)]; ok && st > 0 {
		delete(s.outputs, at(st-1, j))
		w.dev.Retag(y, tensor.Boundary)
		s.inputs[key] = y
		return y
	}
	lo, hi := w.micro(j)
	var whole *tensor.Tensor
	switch {
	case st == 0 && s.raw != nil:
		// The loaded inputs begin at sample rawLo of the mini-batch.
		whole, lo, hi = s.raw, lo-s.rawLo, hi-s.rawLo
	case st > 0 && s.boundary != nil:
		// coop's boundary holds the replica's B samples.
		whole, lo, hi = s.boundary, lo-w.base, hi-w.base
	default:
		panic(fmt.Sprintf("runner: no input for stage %d micro-batch %d", st, j))
	}
	v := whole.Slice(lo, hi)
	s.inputs[key] = v
	return v
}

// labels returns the labels of samples [lo, hi), L a sample
// (datasets.Dataset.LabelsPerSample), from the host batch, provided the
// program loads them on this device.
func (w *worker) labels(lo, hi int) ([]int32, error) {
	s := w.step
	if lo < s.labelsLo || hi > s.labelsHi {
		return nil, fmt.Errorf("labels of samples [%d, %d): the program loads [%d, %d) on device %d",
			lo, hi, s.labelsLo, s.labelsHi, w.k)
	}
	return s.batch.LabelsRange(lo, hi), nil
}

// outputGrad removes and returns the gradient of stage st's output for
// micro-batch j: received, from the loss, or handed over in place by
// stage st+1's backward on this device.
func (w *worker) outputGrad(st, j int) *tensor.Tensor {
	s := w.step
	if dy, ok := s.dOut[at(st, j)]; ok {
		delete(s.dOut, at(st, j))
		return dy
	}
	return take(s.dIn, at(st+1, j))
}
