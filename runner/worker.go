package runner

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"

	"github.com/pipecast/pipecast/datasets"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/runner/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// worker drives one device: it owns the device's stage (and, in coop, the
// replicas of the stages it predicts with) and interprets the device's
// ops in order.
type worker struct {
	t     *Trainer
	k     int
	dev   tensor.Device
	ep    comm.Endpoint
	ops   []schedule.Op
	stage *models.Sequential // the stage this device owns and trains
	flat  *tensor.Tensor     // the stage's parameters, one flat tensor
	// replicas[s] is a copy of stage s's weights (coop's prediction
	// step); nil for the device's own stage and stages it never runs.
	replicas     []*models.Sequential
	replicaFlats []*tensor.Tensor
	opt          *models.SGD
	// rec records the device's events, nil when the trainer does not
	// record (then no op is even timed); blocks runs compute ops block
	// by block, recording an event per block (per-block timing).
	rec    *profiler.Recorder
	blocks bool

	step *stepState
	// progress is where the worker is in its program, for the watchdog.
	progress progress
	// op is the op the worker runs and block the block it runs within it
	// (−1: the op is not run block by block), which a fault names.
	op    schedule.Op
	block int
	// The straggler's state (see straggle): warmupTook[i] holds op i's
	// durations in the warm-up steps, unslowed[i] their median once the
	// measured steps begin (0: not measured), and overslept how long its
	// last sleep overran.
	warmupTook [][]int64
	unslowed   []int64
	overslept  int64
}

// stepState is what a device holds during one step, keyed by micro-batch
// (coop: slice).
type stepState struct {
	step    int
	batch   *datasets.Batch
	raw     *tensor.Tensor // device 0: the mini-batch's inputs, [B, …]
	shard   *tensor.Tensor // coop: this device's shard of the inputs
	inputs  map[int]*tensor.Tensor
	outputs map[int]*tensor.Tensor
	ctxs    map[int]models.Context
	dOut    map[int]*tensor.Tensor // gradients of the stage's outputs
	dIn     map[int]*tensor.Tensor // gradients of the stage's inputs, to send
	// coop: predicted[s] is the input of stage s computed from this
	// device's shard; boundary is the input of the own stage for the
	// whole mini-batch after the all-to-all.
	predicted map[int]*tensor.Tensor
	boundary  *tensor.Tensor
	loss      float64
}

// micro returns the sample range of micro-batch (or slice) j.
func (w *worker) micro(j int) (lo, hi int) {
	m := w.t.cfg.Batch / w.t.cfg.Schedule.Micro
	return j * m, (j + 1) * m
}

func (w *worker) pass(grad bool, sample int) *models.Pass {
	return &models.Pass{
		Dev: w.dev, Train: true, Grad: grad,
		Seed: w.t.cfg.Seed, Step: uint64(w.step.step), Sample: sample,
	}
}

// runStep executes the device's ops for one step.
func (w *worker) runStep(ctx context.Context, s *stepState) (err error) {
	w.step = s
	defer func() {
		if r := recover(); r != nil {
			err = w.fault(r, debug.Stack())
		}
		w.releaseStep()
	}()
	for i, op := range w.ops {
		if err := ctx.Err(); err != nil {
			return err
		}
		w.progress.at(s.step, i)
		w.op, w.block = op, wholeOp
		if f := w.t.cfg.Fail; f != nil && i == 0 && f.Device == w.k && f.Step == s.step {
			return w.faultf("injected failure (fail %d:%d)", f.Device, f.Step)
		}
		if w.t.gate != nil {
			if err := w.t.gate(ctx, w.k, i); err != nil {
				return fmt.Errorf("%s: %v: %w", w.dev.Name(), op, err)
			}
		}
		if w.rec == nil {
			start := w.dev.Now()
			if _, err := w.exec(ctx, op); err != nil {
				return w.opError(op, err)
			}
			w.straggle(i, op, start)
			continue
		}
		if op.Kind == schedule.Recv {
			// Waiting for the peer is idle time, a bubble, not part of the
			// transfer: the event starts when the data is there to copy.
			tag := comm.Tag{Step: s.step, Kind: op.What.String(), Stage: op.Stage, Micro: op.Micro}
			if err := w.ep.Probe(ctx, op.Peer, tag); err != nil {
				return fmt.Errorf("%s: %v: %w", w.dev.Name(), op, err)
			}
		}
		start := w.dev.Now()
		bytes, err := w.exec(ctx, op)
		if err != nil {
			return w.opError(op, err)
		}
		w.straggle(i, op, start)
		end := w.dev.Now()
		w.rec.Record(recordEvent(s.step, w.k, op, wholeOp, start, end, bytes))
	}
	return nil
}

// wholeOp is the Block of an event that times a whole op.
const wholeOp = profiler.WholeOp

// recordEvent returns the record's form of an event of op on device d.
func recordEvent(step, d int, op schedule.Op, block int, start, end, bytes int64) profiler.Event {
	return profiler.OpEvent(step, d, op, block, start, end, bytes)
}

// takeEvents returns the events the device recorded in the step, with
// times from the step's start, and empties the recorder. Events come in
// the order they ended: an op's per-block events before the op's own.
func (w *worker) takeEvents(start int64) []profiler.Event {
	if w.rec == nil {
		return nil
	}
	out := w.rec.AppendRelative(make([]profiler.Event, 0, w.rec.Len()), start)
	w.rec.Reset()
	return out
}

// exec runs one op and returns the bytes it moved between devices.
func (w *worker) exec(ctx context.Context, op schedule.Op) (int64, error) {
	s := w.step
	if w.t.fault != nil {
		if err := w.t.fault(w.k, op); err != nil {
			return 0, err
		}
	}
	switch op.Kind {
	case schedule.Forward:
		lo, _ := w.micro(op.Micro)
		x := w.input(op.Micro)
		y, c := w.forward(op, w.stage, w.k, w.pass(op.Keep, lo), x)
		if op.Keep {
			s.ctxs[op.Micro] = c
		}
		if w.t.last(w.k) || w.t.cfg.Schedule.Name != schedule.Coop {
			s.outputs[op.Micro] = y
		} else {
			y.Release() // coop: the next stage's input came from the prediction
		}
		return 0, nil
	case schedule.Recompute:
		lo, _ := w.micro(op.Micro)
		p := w.pass(true, lo)
		// The checkpointed forward already counted this micro-batch in
		// the running statistics; the recomputation must not count it
		// again.
		p.FreezeStats = true
		y, c := w.forward(op, w.stage, w.k, p, w.input(op.Micro))
		y.Release()
		s.ctxs[op.Micro] = c
		return 0, nil
	case schedule.Loss:
		lo, hi := w.micro(op.Micro)
		logits := take(s.outputs, op.Micro)
		loss, dl := models.CrossEntropy(w.pass(true, lo), logits, s.batch.LabelsRange(lo, hi), 1/float32(w.t.cfg.Batch))
		logits.Release()
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			dl.Release()
			return 0, w.faultf("non-finite loss %v of micro-batch %d: the training diverged (a smaller --lr may help)", loss, op.Micro)
		}
		s.loss += loss
		s.dOut[op.Micro] = dl
		return 0, nil
	case schedule.Backward:
		lo, _ := w.micro(op.Micro)
		c, ok := s.ctxs[op.Micro]
		if !ok {
			return 0, fmt.Errorf("no saved forward for micro-batch %d", op.Micro)
		}
		delete(s.ctxs, op.Micro)
		dy := take(s.dOut, op.Micro)
		dx := w.backward(op, w.stage, w.k, w.pass(true, lo), c, dy)
		dy.Release()
		if in, ok := s.inputs[op.Micro]; ok {
			in.Release()
			delete(s.inputs, op.Micro)
		}
		if w.k > 0 {
			s.dIn[op.Micro] = dx
		} else {
			dx.Release()
		}
		return 0, nil
	case schedule.Send:
		var t *tensor.Tensor
		tag := comm.Tag{Step: s.step, Kind: op.What.String(), Stage: op.Stage, Micro: op.Micro}
		if op.What == schedule.Activation {
			t = take(s.outputs, op.Micro)
		} else {
			t = take(s.dIn, op.Micro)
		}
		err := w.ep.Send(ctx, op.Peer, tag, t)
		t.Release()
		return t.Bytes(), err
	case schedule.Recv:
		lo, hi := w.micro(op.Micro)
		tag := comm.Tag{Step: s.step, Kind: op.What.String(), Stage: op.Stage, Micro: op.Micro}
		if op.What == schedule.Activation {
			dst := w.dev.Alloc(tensor.Boundary, w.t.shapeIn(w.k, hi-lo)...)
			s.inputs[op.Micro] = dst
			return dst.Bytes(), w.ep.Recv(ctx, op.Peer, tag, dst)
		}
		dst := w.dev.Alloc(tensor.Comm, w.t.shapeOut(w.k, hi-lo)...)
		s.dOut[op.Micro] = dst
		return dst.Bytes(), w.ep.Recv(ctx, op.Peer, tag, dst)
	case schedule.Predict:
		return 0, w.predict(op)
	case schedule.AllGather:
		return w.allGather(ctx, op)
	case schedule.AllToAll:
		return w.allToAll(ctx)
	case schedule.Update:
		if err := w.checkGradients(); err != nil {
			return 0, err
		}
		params := models.Params(w.stage)
		w.opt.Step(w.dev, params)
		models.ZeroGrads(w.dev, w.stage)
		return 0, nil
	}
	return 0, fmt.Errorf("unknown op %v", op.Kind)
}

// input returns a view of the stage's input for micro-batch j that the
// caller must not release (it is released with the step state).
func (w *worker) input(j int) *tensor.Tensor {
	s := w.step
	if in, ok := s.inputs[j]; ok {
		return in
	}
	lo, hi := w.micro(j)
	var whole *tensor.Tensor
	switch {
	case w.k == 0:
		whole = s.raw
	case s.boundary != nil:
		whole = s.boundary
	default:
		panic(fmt.Sprintf("runner: no input for stage %d micro-batch %d", w.k, j))
	}
	v := whole.Slice(lo, hi)
	s.inputs[j] = v
	return v
}

// predict runs stage op.Stage's forward on this device's shard without
// keeping activations (coop's prediction step), with the stage's own
// weights or the replica the all-gather filled.
func (w *worker) predict(op schedule.Op) error {
	s := w.step
	layer := w.replicas[op.Stage]
	if op.Stage == w.k {
		layer = w.stage
	}
	if layer == nil {
		return fmt.Errorf("no weights for stage %d", op.Stage)
	}
	x := s.shard
	if op.Stage > 0 {
		x = s.predicted[op.Stage]
	}
	shardSize := w.t.cfg.Batch / w.t.cfg.Schedule.Devices
	p := w.pass(false, op.Shard*shardSize)
	p.FreezeStats = true // replicas never touch running statistics
	y, _ := w.forward(op, layer, op.Stage, p, x)
	w.dev.Retag(y, tensor.Boundary)
	// x stays: every predicted boundary goes out in the all-to-all, which
	// releases them all.
	s.predicted[op.Stage+1] = y
	return nil
}

// allGather shares the weights of the stages in op.Stages: this device
// contributes its own stage's flat weights if listed and receives the
// others into its replicas.
func (w *worker) allGather(ctx context.Context, op schedule.Op) (int64, error) {
	k := w.t.cfg.Schedule.Devices
	var local *tensor.Tensor
	dsts := make([]*tensor.Tensor, k)
	var received int64
	for _, st := range op.Stages {
		if st == w.k {
			local = w.flat
			continue
		}
		dsts[st] = w.replicaFlats[st]
		received += dsts[st].Bytes()
	}
	tag := comm.Tag{Step: w.step.step, Kind: "weights", Stage: schedule.None, Micro: schedule.None}
	return received, w.ep.AllGather(ctx, tag, local, dsts)
}

// allToAll sends each predicted boundary to the device that owns its
// stage and gathers this stage's input for the whole mini-batch.
func (w *worker) allToAll(ctx context.Context) (int64, error) {
	s := w.step
	k := w.t.cfg.Schedule.Devices
	shard := w.t.cfg.Batch / k
	parts := make([]*tensor.Tensor, k)
	for st := 1; st < k; st++ {
		parts[st] = s.predicted[st]
	}
	dsts := make([]*tensor.Tensor, k)
	var received int64
	if w.k > 0 {
		s.boundary = w.dev.Alloc(tensor.Boundary, w.t.shapeIn(w.k, w.t.cfg.Batch)...)
		for p := range dsts {
			dsts[p] = s.boundary.Slice(p*shard, (p+1)*shard)
			if p != w.k {
				received += dsts[p].Bytes()
			}
		}
	}
	tag := comm.Tag{Step: s.step, Kind: "boundary", Stage: schedule.None, Micro: schedule.None}
	err := w.ep.AllToAll(ctx, tag, parts, dsts)
	for _, d := range dsts {
		d.Release()
	}
	for st, t := range s.predicted {
		t.Release()
		delete(s.predicted, st)
	}
	return received, err
}

// releaseStep frees whatever the step still holds, after success or
// failure alike.
func (w *worker) releaseStep() {
	s := w.step
	if s == nil {
		return
	}
	for _, m := range []map[int]*tensor.Tensor{s.inputs, s.outputs, s.dOut, s.dIn, s.predicted} {
		for j, t := range m {
			t.Release()
			delete(m, j)
		}
	}
	for j, c := range s.ctxs {
		c.Release()
		delete(s.ctxs, j)
	}
	s.raw.Release()
	s.shard.Release()
	s.boundary.Release()
	s.raw, s.shard, s.boundary = nil, nil, nil
}

// take removes and returns m[j], panicking if the program did not
// produce it: a program the checker accepted always does.
func take(m map[int]*tensor.Tensor, j int) *tensor.Tensor {
	t, ok := m[j]
	if !ok {
		panic(fmt.Sprintf("runner: nothing held for micro-batch %d", j))
	}
	delete(m, j)
	return t
}
