package runner

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/pipecast/pipecast/datasets"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// worker drives one device: it owns the device's stages (one, or in
// interleaved several; in coop also the replicas of the stages it
// predicts with) and interprets the device's ops in order.
type worker struct {
	t *Trainer
	// k is the device of the pipeline whose ops the worker runs
	// (program.Devices[k]), d the job's device, d = replica·K + k, which
	// records, faults and injections name; one replica: d = k.
	k, d    int
	replica int
	// base is the first sample of the replica's B in a step's R·B.
	base int
	dev  tensor.Device
	// ep reaches the devices of the worker's pipeline, rank k of K; dp,
	// in a job of replicas, the device's replicas, rank replica of R.
	ep  comm.Endpoint
	dp  comm.Endpoint
	ops []schedule.Op
	// stages[s] is stage s if this device owns and trains it, else nil.
	// The device's stages are cut from one model, so a parameter that two
	// of them share (GPT-2's embedding and LM head, both on device 0 in
	// the V-shaped schedules) is one *Param here, held, updated and
	// counted once; params lists the device's parameters, each once, and
	// flat holds their values as one flat tensor, in that order.
	stages []*models.Sequential
	params []models.NamedParam
	flat   *tensor.Tensor
	owned  []int // the stages this device owns, in increasing order
	// replicas[s] is a copy of stage s's weights (coop's prediction
	// step); nil for the device's own stage and stages it never runs.
	replicas     []*models.Sequential
	replicaFlats []*tensor.Tensor
	opt          models.Optimizer
	// dpParams[s] are the parameters the DPAllReduce of stage s sums
	// (see replicaParams).
	dpParams map[int][]models.NamedParam
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

// stepState is what a device holds during one step, keyed by stage and
// micro-batch (coop: slice).
type stepState struct {
	step  int
	batch *datasets.Batch
	// raw holds the inputs the first stage's forwards slice their
	// micro-batches from, samples [rawLo, rawLo+len) of the mini-batch,
	// on the device whose program loads them (the whole mini-batch on
	// the owner of stage 0).
	raw   *tensor.Tensor
	rawLo int
	shard *tensor.Tensor // coop: this device's shard of the inputs
	// labelsLo and labelsHi bound the samples whose labels the program
	// loads on this device (the owner of the last stage: all of them);
	// the labels stay in the host batch. Both 0 when none are loaded.
	labelsLo, labelsHi int
	inputs             map[pair]*tensor.Tensor
	outputs            map[pair]*tensor.Tensor
	ctxs               map[pair]models.Context
	dOut               map[pair]*tensor.Tensor // gradients of the stages' outputs
	dIn                map[pair]*tensor.Tensor // gradients of the stages' inputs, to send
	// weights holds the deferred weight gradients of split backwards,
	// from each BackwardInput to its BackwardWeight.
	weights map[pair]models.WeightGrad
	// coop: predicted[s] is the input of stage s computed from this
	// device's shard; boundary is the input of the own stage for the
	// whole mini-batch after the all-to-all.
	predicted map[int]*tensor.Tensor
	boundary  *tensor.Tensor
	loss      float64
}

// pair identifies a stage's micro-batch (coop: slice).
type pair struct{ stage, micro int }

// at returns the pair of stage s and micro-batch j.
func at(s, j int) pair { return pair{s, j} }

// newStepState returns the empty state of a step of batch.
func newStepState(step int, batch *datasets.Batch) *stepState {
	return &stepState{
		step: step, batch: batch,
		inputs: map[pair]*tensor.Tensor{}, outputs: map[pair]*tensor.Tensor{},
		ctxs: map[pair]models.Context{}, dOut: map[pair]*tensor.Tensor{}, dIn: map[pair]*tensor.Tensor{},
		weights:   map[pair]models.WeightGrad{},
		predicted: map[int]*tensor.Tensor{},
	}
}

// micro returns the sample range of micro-batch (or slice) j in the
// step's R·B samples: within the worker's replica's B.
func (w *worker) micro(j int) (lo, hi int) {
	m := w.t.cfg.MicroBatchSize()
	return w.base + j*m, w.base + (j+1)*m
}

func (w *worker) pass(grad bool, sample int) *models.Pass {
	return &models.Pass{
		Dev: w.dev, Train: true, Grad: grad,
		Seed: w.t.cfg.Seed, Step: uint64(w.step.step), Sample: sample,
	}
}

// inputPass is pass for a forward of stage st on input x: the first
// stage's input is the mini-batch, whose gradient no one needs, so its
// first layer skips it (models.Pass.NoGradInput), as torch does for an
// input that does not require a gradient.
func (w *worker) inputPass(grad bool, sample, st int, x *tensor.Tensor) *models.Pass {
	p := w.pass(grad, sample)
	if st == 0 {
		p.NoGradInput = x
	}
	return p
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
		if f := w.t.cfg.Fail; f != nil && i == 0 && f.Device == w.d && f.Step == s.step {
			return w.faultf("injected failure (fail %d:%d)", f.Device, f.Step)
		}
		if w.t.gate != nil {
			if err := w.t.gate(ctx, w.d, i); err != nil {
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
		w.rec.Record(recordEvent(s.step, w.d, op, wholeOp, start, end, bytes))
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
	if w.t.fault != nil {
		if err := w.t.fault(w.d, op); err != nil {
			return 0, err
		}
	}
	switch op.Kind {
	case schedule.Forward:
		return 0, w.forwardOp(op)
	case schedule.Recompute:
		return 0, w.recomputeOp(op)
	case schedule.Loss:
		return 0, w.lossOp(op)
	case schedule.Backward, schedule.BackwardInput:
		return 0, w.backwardOp(op)
	case schedule.BackwardWeight:
		return 0, w.backwardWeightOp(op)
	case schedule.Send:
		return w.send(ctx, op)
	case schedule.Recv:
		return w.recv(ctx, op)
	case schedule.Predict:
		return 0, w.predict(op)
	case schedule.AllGather:
		return w.allGather(ctx, op)
	case schedule.AllToAll:
		return w.allToAll(ctx, op)
	case schedule.AllReduce:
		return w.allReduce(ctx, op)
	case schedule.DPAllReduce:
		return w.dpAllReduce(ctx, op)
	case schedule.Update:
		return 0, w.update()
	}
	return 0, fmt.Errorf("unknown op %v", op.Kind)
}

// send posts the output (activation) or the input's gradient of stage
// op.Stage for micro-batch op.Micro to device op.Peer.
func (w *worker) send(ctx context.Context, op schedule.Op) (int64, error) {
	s := w.step
	tag := comm.Tag{Step: s.step, Kind: op.What.String(), Stage: op.Stage, Micro: op.Micro}
	held := s.outputs
	if op.What == schedule.Gradient {
		held = s.dIn
	}
	t := take(held, at(op.Stage, op.Micro))
	err := w.ep.Send(ctx, op.Peer, tag, t)
	t.Release()
	return t.Bytes(), err
}

// recv receives what device op.Peer sent: the input of stage op.Stage+1,
// or the gradient of stage op.Stage−1's output.
func (w *worker) recv(ctx context.Context, op schedule.Op) (int64, error) {
	s := w.step
	lo, hi := w.micro(op.Micro)
	tag := comm.Tag{Step: s.step, Kind: op.What.String(), Stage: op.Stage, Micro: op.Micro}
	if op.What == schedule.Activation {
		dst := w.dev.Alloc(tensor.Boundary, w.t.shapeIn(op.Stage+1, hi-lo)...)
		s.inputs[at(op.Stage+1, op.Micro)] = dst
		return dst.Bytes(), w.ep.Recv(ctx, op.Peer, tag, dst)
	}
	dst := w.dev.Alloc(tensor.Comm, w.t.shapeOut(op.Stage-1, hi-lo)...)
	s.dOut[at(op.Stage-1, op.Micro)] = dst
	return dst.Bytes(), w.ep.Recv(ctx, op.Peer, tag, dst)
}

// releaseStep frees whatever the step still holds, after success or
// failure alike.
func (w *worker) releaseStep() {
	s := w.step
	if s == nil {
		return
	}
	for _, m := range []map[pair]*tensor.Tensor{s.inputs, s.outputs, s.dOut, s.dIn} {
		for j, t := range m {
			t.Release()
			delete(m, j)
		}
	}
	for st, t := range s.predicted {
		t.Release()
		delete(s.predicted, st)
	}
	for j, c := range s.ctxs {
		c.Release()
		delete(s.ctxs, j)
	}
	for j, wg := range s.weights {
		wg.Release()
		delete(s.weights, j)
	}
	s.raw.Release()
	s.shard.Release()
	s.boundary.Release()
	s.raw, s.shard, s.boundary = nil, nil, nil
}

// take removes and returns m[j], panicking if the program did not
// produce it: a program the checker accepted always does.
func take(m map[pair]*tensor.Tensor, j pair) *tensor.Tensor {
	t, ok := m[j]
	if !ok {
		panic(fmt.Sprintf("runner: nothing held for stage %d micro-batch %d", j.stage, j.micro))
	}
	delete(m, j)
	return t
}
