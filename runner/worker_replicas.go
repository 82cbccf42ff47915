package runner

import (
	"context"
	"slices"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// Data-parallel replicas: every device sums each of its stages'
// gradients with the same device's in the other replicas (the program's
// DPAllReduce), so that every replica updates with the gradient of the
// whole step's R·B samples. The loss is the mean over those R·B (see
// lossOp), so the sum needs no division.

// dpBucketBytes bounds the gradients one transfer of a DPAllReduce
// carries: PyTorch's DistributedDataParallel's bucket_cap_mb default,
// 25 MiB.
const dpBucketBytes = 25 << 20

// replicaParams returns, for each stage the worker's DPAllReduce ops
// sum, the parameters that op sums: the stage's, each parameter with the
// last op whose stage uses it, when two of the device's stages share one
// (GPT-2's tied embedding and LM head on one device in a V), so that it
// is summed once, after both stages' backwards.
func replicaParams(w *worker) map[int][]models.NamedParam {
	last := map[*models.Param]int{}
	var order []int
	for _, op := range w.ops {
		if op.Kind != schedule.DPAllReduce {
			continue
		}
		order = append(order, op.Stage)
		for _, p := range models.Params(w.stages[op.Stage]) {
			last[p.Param] = op.Stage
		}
	}
	out := map[int][]models.NamedParam{}
	for _, s := range order {
		for _, p := range models.Params(w.stages[s]) {
			if last[p.Param] == s && !slices.ContainsFunc(out[s], func(q models.NamedParam) bool { return q.Param == p.Param }) {
				out[s] = append(out[s], p)
			}
		}
	}
	return out
}

// dpAllReduce sums stage op.Stage's gradients over the device's
// replicas, in buckets of at most dpBucketBytes taken from the stage's
// last parameters first (the order the backward completes them, as
// DistributedDataParallel buckets), and returns the bytes received.
func (w *worker) dpAllReduce(ctx context.Context, op schedule.Op) (int64, error) {
	params := w.dpParams[op.Stage]
	var received int64
	bucket := 0
	for hi := len(params); hi > 0; {
		lo, size := hi-1, params[hi-1].Param.Value.Bytes()
		for lo > 0 && size+params[lo-1].Param.Value.Bytes() <= dpBucketBytes {
			lo--
			size += params[lo].Param.Value.Bytes()
		}
		got, err := w.reduceBucket(ctx, op, bucket, params[lo:hi])
		received += got
		if err != nil {
			return received, err
		}
		bucket, hi = bucket+1, lo
	}
	return received, nil
}

// reduceBucket sums the gradients of params over the replicas: every
// replica sends each other its gradients as one flat tensor, receives
// theirs, and sets its gradients to the sum over the replicas in
// increasing order, so that every replica computes the same float32
// values.
func (w *worker) reduceBucket(ctx context.Context, op schedule.Op, bucket int, params []models.NamedParam) (int64, error) {
	grads := make([]*tensor.Tensor, len(params))
	total := 0
	for i, p := range params {
		grads[i] = p.Param.GradFor(w.dev)
		total += grads[i].Len()
	}
	// own is a snapshot apart from the gradients, which the sum
	// overwrites while an in-process peer may still be copying it.
	own := w.dev.Alloc(tensor.Comm, total)
	defer own.Release()
	eachPart(own, grads, func(part, g *tensor.Tensor) { w.dev.Copy(part, g) })
	tag := comm.Tag{Step: w.step.step, Kind: "dp-gradient", Stage: op.Stage, Micro: bucket}
	R, me := w.dp.Size(), w.dp.Rank()
	for r := range R {
		if r != me {
			if err := w.dp.Send(ctx, r, tag, own); err != nil {
				return 0, err
			}
		}
	}
	parts := make([]*tensor.Tensor, R)
	defer func() {
		for r, p := range parts {
			if r != me && p != nil {
				p.Release()
			}
		}
	}()
	var received int64
	for r := range R {
		if r == me {
			parts[r] = own
			continue
		}
		parts[r] = w.dev.Alloc(tensor.Comm, total)
		if err := w.dp.Recv(ctx, r, tag, parts[r]); err != nil {
			return received, err
		}
		received += parts[r].Bytes()
	}
	sum := w.dev.Alloc(tensor.Comm, total)
	defer sum.Release()
	w.dev.Copy(sum, parts[0])
	for _, p := range parts[1:] {
		w.dev.Add(sum, sum, p)
	}
	eachPart(sum, grads, func(part, g *tensor.Tensor) { w.dev.Copy(g, part) })
	return received, nil
}

// eachPart calls f with each tensor of ts and the view of flat that
// holds it, one after another from flat's start.
func eachPart(flat *tensor.Tensor, ts []*tensor.Tensor, f func(part, t *tensor.Tensor)) {
	off := 0
	for _, t := range ts {
		s := flat.Slice(off, off+t.Len())
		v := s.Reshape(t.Shape()...)
		f(v, t)
		v.Release()
		s.Release()
		off += t.Len()
	}
}

// commStats returns what the worker's device moved: its pipeline's and
// its replicas' transfers (one group's counters in a multi-process run).
func (w *worker) commStats() comm.Stats {
	st := w.ep.Stats()
	if w.dp == nil || w.t.group != nil {
		return st
	}
	d := w.dp.Stats()
	st.SentBytes += d.SentBytes
	st.ReceivedBytes += d.ReceivedBytes
	st.Messages += d.Messages
	return st
}
