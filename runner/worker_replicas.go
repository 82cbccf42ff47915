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

// DPBucketBytes bounds the gradients one transfer of a DPAllReduce
// carries (and the predictor prices a bucket at): PyTorch's DistributedDataParallel's bucket_cap_mb default,
// 25 MiB.
const DPBucketBytes = 25 << 20

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
// replicas, in buckets of at most DPBucketBytes taken from the stage's
// last parameters first (the order the backward completes them, as
// DistributedDataParallel buckets), and returns the bytes received.
func (w *worker) dpAllReduce(ctx context.Context, op schedule.Op) (int64, error) {
	params := w.dpParams[op.Stage]
	sizes := make([]int64, len(params))
	for i, p := range params {
		sizes[i] = p.Param.Value.Bytes()
	}
	var received int64
	for i, b := range Buckets(sizes) {
		got, err := w.reduceBucket(ctx, op, i, params[b[0]:b[1]])
		received += got
		if err != nil {
			return received, err
		}
	}
	return received, nil
}

// Buckets splits tensors of the given sizes (bytes, in parameter order)
// into the buckets a DPAllReduce sums, in the order it sums them: ranges
// [lo, hi) from the last tensor back, each as many tensors as fit in
// DPBucketBytes (a larger one alone).
func Buckets(sizes []int64) [][2]int {
	var out [][2]int
	for hi := len(sizes); hi > 0; {
		lo, size := hi-1, sizes[hi-1]
		for lo > 0 && size+sizes[lo-1] <= DPBucketBytes {
			lo--
			size += sizes[lo]
		}
		out = append(out, [2]int{lo, hi})
		hi = lo
	}
	return out
}

// reduceBucket sums the gradients of params over the replicas
// (SumReplicas).
func (w *worker) reduceBucket(ctx context.Context, op schedule.Op, bucket int, params []models.NamedParam) (int64, error) {
	grads := make([]*tensor.Tensor, len(params))
	for i, p := range params {
		grads[i] = p.Param.GradFor(w.dev)
	}
	tag := comm.Tag{Step: w.step.step, Kind: "dp-gradient", Stage: op.Stage, Micro: bucket}
	return SumReplicas(ctx, w.dev, w.dp, tag, grads)
}

// SumReplicas sums ts over the ranks of ep, the device's replicas, in
// place, as a DPAllReduce sums a bucket, so that every replica ends with
// the same float32 values, each element the sum over the replicas in
// increasing rank order ((p0 + p1) + p2 + …). It returns the bytes
// received (SumReceived). The calibration times it as the runs run it.
// Where ep sums itself (comm.Reducer: MPI_Allreduce over a communicator
// of the replicas), the library sums, in its own order.
//
// Two replicas exchange their buckets whole and each adds the other's.
// From three on, every bucket is cut into R chunks: replica r sums chunk
// r from the others' (a reduce-scatter) and sends them the sum (an
// all-gather), so that a replica moves and adds about 3(R−1)/R of the
// bucket where exchanging whole buckets would move and add 2(R−1) of it
// (SumPasses): at R = 3 and 4 on two cores a parameter server beat the
// whole exchange by a third (cmd/dpbench -sync).
func SumReplicas(ctx context.Context, dev tensor.Device, ep comm.Endpoint, tag comm.Tag, ts []*tensor.Tensor) (int64, error) {
	total := 0
	for _, t := range ts {
		total += t.Len()
	}
	if red, ok := ep.(comm.Reducer); ok && ep.Size() > 1 {
		return sumReduced(ctx, dev, red, ep.Size(), tag, ts, total)
	}
	if R := ep.Size(); R >= 3 && total >= R {
		return sumScattered(ctx, dev, ep, tag, ts, total)
	}
	return sumExchanged(ctx, dev, ep, tag, ts, total)
}

// sumReduced is SumReplicas by a transport that sums itself (MPI's
// MPI_Allreduce on the replicas' own communicator): the tensors are
// copied into one flat tensor, summed there and copied back. The sum is
// the library's, the same float32 values on every replica; its order of
// additions is the library's too. It returns the bytes SumReceived
// counts, what the fewest an all-reduce moves, so that forecasts read
// its events as any sum's.
func sumReduced(ctx context.Context, dev tensor.Device, red comm.Reducer, replicas int, tag comm.Tag, ts []*tensor.Tensor, total int) (int64, error) {
	flat := dev.Alloc(tensor.Comm, total)
	defer flat.Release()
	EachPart(flat, ts, func(part, t *tensor.Tensor) { dev.Copy(part, t) })
	if err := red.AllReduceSum(ctx, tag, flat); err != nil {
		return 0, err
	}
	EachPart(flat, ts, func(part, t *tensor.Tensor) { dev.Copy(t, part) })
	return SumReceived(int64(total)*tensor.BytesPerElement, replicas), nil
}

// SumReceived returns the bytes each replica receives when SumReplicas
// sums a bucket of bytes over replicas replicas: the others' buckets
// whole, or from three replicas on, the others' parts of its chunk and
// the others' summed chunks.
func SumReceived(bytes int64, replicas int) int64 {
	switch {
	case replicas < 2:
		return 0
	case replicas < 3:
		return int64(replicas-1) * bytes
	}
	return 2 * int64(replicas-1) * bytes / int64(replicas)
}

// SumBytes inverts SumReceived: the bucket bytes whose sum over
// replicas replicas receives received bytes.
func SumBytes(received int64, replicas int) int64 {
	switch {
	case replicas < 2:
		return 0
	case replicas < 3:
		return received / int64(replicas-1)
	}
	return received * int64(replicas) / (2 * int64(replicas-1))
}

// SumPasses returns how many times SumReplicas reads or writes a bucket's
// bytes on each replica, in units of the bucket (a copy, a receive or an
// add each one pass over what they touch): the snapshot, R−1 receives
// and R−1 adds of the whole bucket when exchanging it whole; from three
// replicas on the snapshot, R−1 receives and adds of a chunk, the copy of
// its sum, R−1 receives of the others' sums and the copy back.
func SumPasses(replicas int) float64 {
	r := float64(replicas)
	switch {
	case replicas < 2:
		return 0
	case replicas < 3:
		return 2*r - 1
	}
	return 2 + (3*r-2)/r
}

// sumExchanged is SumReplicas exchanging whole buckets: every replica
// sends each other its tensors as one flat tensor, receives theirs, and
// adds them into its tensors in rank order.
func sumExchanged(ctx context.Context, dev tensor.Device, ep comm.Endpoint, tag comm.Tag, ts []*tensor.Tensor, total int) (int64, error) {
	// own is a snapshot apart from the tensors, which the sum overwrites
	// while an in-process peer may still be copying it.
	own := dev.Alloc(tensor.Comm, total)
	defer own.Release()
	EachPart(own, ts, func(part, t *tensor.Tensor) { dev.Copy(part, t) })
	R, me := ep.Size(), ep.Rank()
	for r := range R {
		if r != me {
			if err := ep.Send(ctx, r, tag, own); err != nil {
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
		parts[r] = dev.Alloc(tensor.Comm, total)
		if err := ep.Recv(ctx, r, tag, parts[r]); err != nil {
			return received, err
		}
		received += parts[r].Bytes()
	}
	// Each tensor becomes the sum of its views in the parts, in rank
	// order, written straight into it: (p0 + p1) + p2 + ….
	off := 0
	for _, t := range ts {
		views := make([]*tensor.Tensor, R)
		for r, p := range parts {
			s := p.Slice(off, off+t.Len())
			views[r] = s.Reshape(t.Shape()...)
			s.Release()
		}
		if R == 1 {
			dev.Copy(t, views[0])
		} else {
			dev.Add(t, views[0], views[1])
		}
		for _, v := range views[2:] {
			dev.Add(t, t, v)
		}
		for _, v := range views {
			v.Release()
		}
		off += t.Len()
	}
	return received, nil
}

// sumScattered is SumReplicas by a reduce-scatter and an all-gather:
// replica r owns chunk r of the flat bucket, [r·n/R, (r+1)·n/R).
func sumScattered(ctx context.Context, dev tensor.Device, ep comm.Endpoint, tag comm.Tag, ts []*tensor.Tensor, total int) (int64, error) {
	R, me := ep.Size(), ep.Rank()
	lo := func(r int) int { return r * total / R }
	// own is a snapshot apart from the tensors, whose chunks the peers
	// copy when they ask (in-process) while this replica writes the sum.
	own := dev.Alloc(tensor.Comm, total)
	defer own.Release()
	EachPart(own, ts, func(part, t *tensor.Tensor) { dev.Copy(part, t) })
	chunk := func(t *tensor.Tensor, r int) *tensor.Tensor { return t.Slice(lo(r), lo(r+1)) }
	for r := range R {
		if r != me {
			c := chunk(own, r)
			err := ep.Send(ctx, r, tag, c)
			c.Release()
			if err != nil {
				return 0, err
			}
		}
	}
	// Reduce-scatter: this replica's chunk summed in rank order.
	n := lo(me+1) - lo(me)
	acc := dev.Alloc(tensor.Comm, n)
	defer acc.Release()
	mine := chunk(own, me)
	defer mine.Release()
	var buf *tensor.Tensor
	defer func() { buf.Release() }()
	var received int64
	for r := range R {
		var part *tensor.Tensor
		switch {
		case r == me:
			part = mine
		case r == 0:
			part = acc // the first part lands where the sum grows
		default:
			if buf == nil {
				buf = dev.Alloc(tensor.Comm, n)
			}
			part = buf
		}
		if r != me {
			if err := ep.Recv(ctx, r, tag, part); err != nil {
				return received, err
			}
			received += part.Bytes()
		}
		switch {
		case r == 0 && part != acc:
			dev.Copy(acc, part)
		case r > 0:
			dev.Add(acc, acc, part)
		}
	}
	// All-gather: every replica's summed chunk to every other.
	gathered := comm.Tag{Step: tag.Step, Kind: tag.Kind + "-sum", Stage: tag.Stage, Micro: tag.Micro}
	for r := range R {
		if r != me {
			if err := ep.Send(ctx, r, gathered, acc); err != nil {
				return received, err
			}
		}
	}
	sum := dev.Alloc(tensor.Comm, total)
	defer sum.Release()
	for r := range R {
		c := chunk(sum, r)
		var err error
		if r == me {
			dev.Copy(c, acc)
		} else {
			err = ep.Recv(ctx, r, gathered, c)
			received += c.Bytes()
		}
		c.Release()
		if err != nil {
			return received, err
		}
	}
	EachPart(sum, ts, func(part, t *tensor.Tensor) { dev.Copy(t, part) })
	return received, nil
}

// EachPart calls f with each tensor of ts and the view of flat that
// holds it, one after another from flat's start: the tensors of a
// bucket as its flat snapshot lays them out.
func EachPart(flat *tensor.Tensor, ts []*tensor.Tensor, f func(part, t *tensor.Tensor)) {
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
